package dev.varve.cli;

import java.io.IOException;
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
}
