package dev.varve.server;

import dev.varve.engine.Varve;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.channels.FileChannel;
import java.nio.file.FileVisitResult;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.SimpleFileVisitor;
import java.nio.file.StandardCopyOption;
import java.nio.file.StandardOpenOption;
import java.nio.file.attribute.BasicFileAttributes;
import java.util.ArrayList;
import java.util.List;
import java.util.stream.Stream;

/**
 * The target directory of a backup while it is being received. The store is built in {@code TARGET/.incoming}
 * ({@link Varve#INCOMING_DIR}); while that subdirectory exists {@link Varve#open} refuses {@code TARGET} with a
 * message saying it is an unfinished transfer. Only once every frame arrived and was verified does {@link #commit}
 * move the store's files up into {@code TARGET} (one atomic rename each) and then delete {@code .incoming}, fsyncing
 * the directory in between: a crash at any point leaves either a directory that refuses to open or the finished
 * store. Running the backup again over a refused directory starts it afresh.
 */
final class IncomingStore {
    private final Path target;
    private final Path incoming;

    private IncomingStore(Path target) {
        this.target = target;
        this.incoming = target.resolve(Varve.INCOMING_DIR);
    }

    /** Makes {@code target} an empty directory marked unfinished; wipes an earlier unfinished transfer there. */
    static IncomingStore prepare(Path target) {
        IncomingStore s = new IncomingStore(target.toAbsolutePath().normalize());
        try {
            if (Files.exists(s.target)) {
                if (!Files.isDirectory(s.target)) throw new IllegalArgumentException("backup target " + target + " exists and is not a directory");
                if (Files.exists(s.incoming)) {
                    deleteContents(s.target); // an earlier transfer was cut: start over
                } else if (!isEmpty(s.target)) {
                    throw new IllegalArgumentException("backup target " + target + " exists and is not empty; a backup writes a new directory");
                }
            }
            Files.createDirectories(s.incoming);
            fsyncDirectory(s.target);
            if (s.target.getParent() != null) fsyncDirectory(s.target.getParent());
        } catch (IOException e) {
            throw new UncheckedIOException("cannot prepare backup target " + target, e);
        }
        return s;
    }

    /** Where the store is built. */
    Path storeDir() {
        return incoming;
    }

    Path target() {
        return target;
    }

    /** Moves the finished, closed store into place and removes the unfinished mark, durably. */
    void commit() {
        try {
            List<Path> children = new ArrayList<>();
            try (Stream<Path> s = Files.list(incoming)) {
                s.forEach(children::add);
            }
            for (Path c : children) Files.move(c, target.resolve(c.getFileName()), StandardCopyOption.ATOMIC_MOVE);
            fsyncDirectory(target);
            Files.delete(incoming);
            fsyncDirectory(target);
        } catch (IOException e) {
            throw new UncheckedIOException("cannot move the received store into " + target + "; it stays marked unfinished", e);
        }
    }

    private static boolean isEmpty(Path dir) throws IOException {
        try (Stream<Path> s = Files.list(dir)) {
            return s.findAny().isEmpty();
        }
    }

    private static void deleteContents(Path dir) throws IOException {
        Files.walkFileTree(dir, new SimpleFileVisitor<>() {
            @Override
            public FileVisitResult visitFile(Path file, BasicFileAttributes attrs) throws IOException {
                Files.delete(file);
                return FileVisitResult.CONTINUE;
            }

            @Override
            public FileVisitResult postVisitDirectory(Path d, IOException e) throws IOException {
                if (e != null) throw e;
                if (!d.equals(dir)) Files.delete(d);
                return FileVisitResult.CONTINUE;
            }
        });
    }

    private static void fsyncDirectory(Path dir) throws IOException {
        try (FileChannel ch = FileChannel.open(dir, StandardOpenOption.READ)) {
            ch.force(true);
        }
    }
}
