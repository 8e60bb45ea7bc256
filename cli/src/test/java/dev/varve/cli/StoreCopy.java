package dev.varve.cli;

import java.io.IOException;
import java.io.RandomAccessFile;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.stream.Stream;

/** A copy of a store directory, file by file, for tests that damage it. */
final class StoreCopy {
    private StoreCopy() {
    }

    static Path of(Path store, Path to) throws IOException {
        try (Stream<Path> s = Files.walk(store)) {
            for (Path p : (Iterable<Path>) s::iterator) {
                Path t = to.resolve(store.relativize(p).toString());
                if (Files.isDirectory(p)) Files.createDirectories(t);
                else Files.copy(p, t);
            }
        }
        return to;
    }

    /** A copy of {@code store} in a new directory under {@code dir}, so that each damage has a copy of its own. */
    static Path under(Path store, Path dir) throws IOException {
        return of(store, Files.createTempDirectory(dir, "copy-"));
    }

    /** Damages one byte of {@code file}: XORs the byte at {@code offset} with {@code mask}. */
    static void flip(Path file, long offset, int mask) throws IOException {
        try (RandomAccessFile f = new RandomAccessFile(file.toFile(), "rw")) {
            f.seek(offset);
            int b = f.read();
            f.seek(offset);
            f.write(b ^ mask);
        }
    }
}
