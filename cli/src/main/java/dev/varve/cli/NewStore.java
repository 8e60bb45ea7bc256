package dev.varve.cli;

import dev.varve.config.VarveConfig;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.stream.Stream;

/** The target of load, backup and salvage: a directory that does not exist yet or is empty. */
final class NewStore {
    private NewStore() {
    }

    /** Checks {@code dir} can take a new store (nothing is created yet). */
    static void checkEmpty(Path dir) throws IOException {
        if (!Files.exists(dir)) return;
        if (!Files.isDirectory(dir)) throw new IllegalArgumentException(dir + " exists and is not a directory");
        try (Stream<Path> s = Files.list(dir)) {
            if (s.findAny().isPresent()) throw new IllegalArgumentException(dir + " is not empty; the new store needs an empty or new directory");
        }
    }

    /** The configuration of a new store in {@code dir}: the given properties file's, or defaults with this page size and partition count. */
    static VarveConfig config(Path dir, Path properties, int pageSize, int partitions) {
        if (properties != null) return VarveConfig.load(properties).toBuilder().path(dir).build();
        return VarveConfig.builder().path(dir).pageSize(pageSize).partitions(partitions).dataRegionSize(64L << 20)
                .checkpointBufferSize(16L << 20).captureBufferSize(4L << 20).build();
    }
}
