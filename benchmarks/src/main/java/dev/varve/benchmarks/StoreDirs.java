package dev.varve.benchmarks;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Comparator;
import java.util.List;
import java.util.stream.Stream;

/**
 * Store directories of the jobs. {@link #wipe} deletes only what it can tell is ours: a missing or empty directory,
 * one holding the {@value #MARKER} file this tool writes, or a Varve store (it holds {@code varve.lock}); anything
 * else is refused, so a mistyped {@code --dir} never deletes a user's files.
 */
final class StoreDirs {
    static final String MARKER = "varve-benchmarks.marker";

    private StoreDirs() {
    }

    /** Empties {@code dir} (creating it) and marks it as ours. */
    static void wipe(Path dir) throws IOException {
        if (Files.exists(dir)) {
            if (!Files.isDirectory(dir)) throw new IOException(dir + " is not a directory");
            if (!isOurs(dir)) throw new IOException("refusing to wipe " + dir.toAbsolutePath()
                    + ": it is neither empty, nor a Varve store, nor made by this tool; choose another --dir");
            deleteContents(dir);
        }
        Files.createDirectories(dir);
        Files.writeString(dir.resolve(MARKER), "store directory of varve-benchmarks; deleted on the next run\n");
    }

    /** Deletes {@code dir} and everything under it; a missing directory is fine. */
    static void delete(Path dir) throws IOException {
        if (!Files.exists(dir)) return;
        deleteContents(dir);
        Files.delete(dir);
    }

    /** Bytes of the regular files under {@code dir}. */
    static long size(Path dir) throws IOException {
        try (Stream<Path> s = Files.walk(dir)) {
            return s.filter(Files::isRegularFile).mapToLong(p -> p.toFile().length()).sum();
        }
    }

    private static boolean isOurs(Path dir) throws IOException {
        if (Files.exists(dir.resolve(MARKER)) || Files.exists(dir.resolve("varve.lock"))) return true;
        try (Stream<Path> s = Files.list(dir)) {
            return s.findAny().isEmpty();
        }
    }

    private static void deleteContents(Path dir) throws IOException {
        List<Path> paths;
        try (Stream<Path> s = Files.walk(dir)) {
            paths = s.filter(p -> !p.equals(dir)).sorted(Comparator.reverseOrder()).toList();
        }
        for (Path p : paths) Files.delete(p);
    }
}
