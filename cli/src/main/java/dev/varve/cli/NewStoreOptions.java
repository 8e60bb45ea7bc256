package dev.varve.cli;

import dev.varve.config.VarveConfig;
import picocli.CommandLine.Option;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Comparator;
import java.util.stream.Stream;

/** The target of load, backup and salvage: a new store in a directory that does not exist yet or is empty. */
final class NewStoreOptions {
    @Option(names = "--to", required = true, paramLabel = "NEWDIR", description = "The new store directory (new or empty).")
    Path to;

    @Option(names = "--new-config", paramLabel = "FILE", description = "A varve.* properties file for the new store (its path is NEWDIR).")
    Path properties;

    /** Checks the target can take a new store (nothing is created yet). */
    void checkEmpty() throws IOException {
        if (!Files.exists(to)) return;
        if (!Files.isDirectory(to)) throw new IllegalArgumentException(to + " exists and is not a directory");
        try (Stream<Path> s = Files.list(to)) {
            if (s.findAny().isPresent()) throw new IllegalArgumentException(to + " is not empty; the new store needs an empty or new directory");
        }
    }

    /**
     * Removes what a failed command put in the target, which was new ({@code createdDir}) or empty before it, so no
     * half-made store is left to be taken for a whole one; a failure to remove is added to {@code failure}.
     */
    void discard(boolean createdDir, Exception failure) {
        if (!Files.exists(to)) return;
        try (Stream<Path> walk = Files.walk(to)) {
            for (Path p : walk.sorted(Comparator.reverseOrder()).toList()) if (createdDir || !p.equals(to)) Files.delete(p);
        } catch (IOException | UncheckedIOException e) {
            failure.addSuppressed(e);
        }
    }

    /** The new store's configuration: the properties file's, or defaults with this page size and partition count. */
    VarveConfig config(int pageSize, int partitions) {
        if (properties != null) return VarveConfig.load(properties).toBuilder().path(to).build();
        return VarveConfig.builder().path(to).pageSize(pageSize).partitions(partitions).dataRegionSize(64L << 20)
                .checkpointBufferSize(16L << 20).captureBufferSize(4L << 20).build();
    }
}
