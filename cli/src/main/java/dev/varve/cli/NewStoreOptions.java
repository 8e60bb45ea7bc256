package dev.varve.cli;

import dev.varve.config.VarveConfig;
import dev.varve.engine.Varve;
import picocli.CommandLine.Option;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.channels.FileChannel;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.nio.file.StandardOpenOption;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.List;
import java.util.stream.Stream;

/**
 * The target of load, backup and salvage: a new store in a directory that does not exist yet or is empty. The store
 * is built in {@code NEWDIR/.incoming} ({@link Varve#INCOMING_DIR}), which every open and every command refuses as
 * an unfinished transfer, and moved up into NEWDIR only once it is complete and closed ({@link #commit}): a command
 * killed half-way (SIGKILL, power loss: no cleanup runs) leaves a directory that refuses to open, never a partial
 * store that passes for a whole one. Running the same command again over it starts afresh.
 */
final class NewStoreOptions {
    @Option(names = "--to", required = true, paramLabel = "NEWDIR", description = "The new store directory (new or empty).")
    Path to;

    @Option(names = "--new-config", paramLabel = "FILE", description = "A varve.* properties file for the new store (its path is NEWDIR).")
    Path properties;

    /** Whether {@link #begin} created NEWDIR, so {@link #discard} removes it too. */
    private boolean createdDir;

    /**
     * Checks the target can take a new store (nothing is created yet): it is new, empty, or holds what a killed
     * run of a command like this left ({@code .incoming}), which {@link #begin} wipes; and that a properties file
     * given is there.
     */
    void checkEmpty() throws IOException {
        if (properties != null) Main.requireFile("--new-config", properties);
        if (!Files.exists(to)) return;
        if (!Files.isDirectory(to)) throw new IllegalArgumentException(to + " exists and is not a directory");
        if (Files.isDirectory(staging())) return;
        try (Stream<Path> s = Files.list(to)) {
            if (s.findAny().isPresent()) throw new IllegalArgumentException(to + " is not empty; the new store needs an empty or new directory");
        }
    }

    /** Where the store is built until {@link #commit}. */
    private Path staging() {
        return to.resolve(Varve.INCOMING_DIR);
    }

    /** Writes the new store (through a {@code Varve} it closes before it returns). */
    interface Build {
        void run() throws IOException;
    }

    /**
     * {@link #begin}, {@code build}, {@link #commit}: the whole store or, if any of it fails, nothing left behind
     * (the target was new or empty).
     */
    void build(Build build) throws IOException {
        try {
            begin();
            build.run();
            commit();
        } catch (RuntimeException | IOException e) {
            discard(e);
            throw e;
        }
    }

    /** Creates NEWDIR marked unfinished (its {@code .incoming}), durably, after wiping an earlier unfinished run. */
    void begin() throws IOException {
        createdDir = !Files.exists(to);
        if (Files.isDirectory(staging())) deleteContents(false); // a killed run's, maybe half moved up by its commit
        Files.createDirectories(staging());
        fsyncDirectory(to);
        Path parent = to.toAbsolutePath().getParent();
        if (parent != null) fsyncDirectory(parent); // NEWDIR itself, when it is new
    }

    /**
     * Moves the finished, closed store up into NEWDIR and then removes the unfinished mark, fsyncing the directory
     * in between: a crash at any point leaves either a directory that refuses to open or the whole store.
     */
    void commit() throws IOException {
        List<Path> children = new ArrayList<>();
        try (Stream<Path> s = Files.list(staging())) {
            s.forEach(children::add);
        }
        for (Path c : children) Files.move(c, to.resolve(c.getFileName()), StandardCopyOption.ATOMIC_MOVE);
        fsyncDirectory(to);
        Files.delete(staging());
        fsyncDirectory(to);
    }

    /**
     * Removes what a failed command put in the target, which was new or empty before it, so no half-made store is
     * left behind (the unfinished mark covers a run that is killed instead); a failure to remove is added to
     * {@code failure}.
     */
    void discard(Exception failure) {
        if (!Files.exists(to)) return;
        try {
            deleteContents(createdDir);
        } catch (IOException | UncheckedIOException e) {
            failure.addSuppressed(e);
        }
    }

    private void deleteContents(boolean andDir) throws IOException {
        try (Stream<Path> walk = Files.walk(to)) {
            for (Path p : walk.sorted(Comparator.reverseOrder()).toList()) if (andDir || !p.equals(to)) Files.delete(p);
        }
    }

    private static void fsyncDirectory(Path dir) throws IOException {
        try (FileChannel ch = FileChannel.open(dir, StandardOpenOption.READ)) {
            ch.force(true);
        }
    }

    /** The new store's configuration (built in the staging directory): the properties file's, or defaults with this page size and partition count. */
    VarveConfig config(int pageSize, int partitions) {
        if (properties != null) return VarveConfig.load(properties).toBuilder().path(staging()).build();
        return VarveConfig.builder().path(staging()).pageSize(pageSize).partitions(partitions).dataRegionSize(64L << 20)
                .checkpointBufferSize(16L << 20).captureBufferSize(4L << 20).build();
    }
}
