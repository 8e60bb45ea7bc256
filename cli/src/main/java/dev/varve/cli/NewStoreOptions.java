package dev.varve.cli;

import dev.varve.config.VarveConfig;
import dev.varve.engine.IncomingStore;
import dev.varve.engine.Varve;
import picocli.CommandLine.Option;

import java.io.IOException;
import java.nio.file.Path;

/**
 * The target of load, backup and salvage: a new store in a directory that does not exist yet or is empty, built as
 * an {@link IncomingStore}: in {@code NEWDIR/.incoming}, which every open and every command refuses as an unfinished
 * transfer, and moved up into NEWDIR only once it is complete and closed. A command killed half-way (SIGKILL, power
 * loss: no cleanup runs) leaves a directory that refuses to open, never a partial store that passes for a whole one;
 * running the same command again over it starts afresh. While one command writes NEWDIR, another is refused.
 */
final class NewStoreOptions {
    @Option(names = "--to", required = true, paramLabel = "NEWDIR", description = "The new store directory (new or empty).")
    Path to;

    @Option(names = "--new-config", paramLabel = "FILE", description = "A varve.* properties file for the new store (its path is NEWDIR).")
    Path properties;

    /**
     * Checks the target can take a new store (nothing is created yet): it is new, empty, or holds what a killed
     * run of a command like this left ({@code .incoming}); and that a properties file given is there.
     */
    void checkEmpty() {
        if (properties != null) Main.requireFile("--new-config", properties);
        IncomingStore.checkTarget(to);
    }

    /** Writes the new store (through a {@code Varve} it closes before it returns). */
    interface Build {
        void run() throws IOException;
    }

    /** Held from {@link #begin} to {@link #commit} or {@link #discard}. */
    private IncomingStore incoming;

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

    /** Creates NEWDIR marked unfinished, durably, after wiping an earlier unfinished run; locks it until commit or discard. */
    void begin() {
        incoming = IncomingStore.prepare(to);
    }

    /** Moves the finished, closed store up into NEWDIR. */
    void commit() {
        incoming.commit();
    }

    /**
     * Removes what a failed command put in the target, which was new or empty before it, so no half-made store is
     * left behind (the unfinished mark covers a run that is killed instead); a failure to remove is added to
     * {@code failure}.
     */
    void discard(Exception failure) {
        if (incoming == null) return; // refused before anything was created
        try {
            incoming.discard();
        } catch (RuntimeException e) {
            failure.addSuppressed(e);
        }
    }

    /** Where the store is built until it is committed. */
    private Path staging() {
        return to.resolve(Varve.INCOMING_DIR);
    }

    /** The new store's configuration (built in the staging directory): the properties file's, or defaults with this page size and partition count. */
    VarveConfig config(int pageSize, int partitions) {
        if (properties != null) return VarveConfig.load(properties, staging());
        return VarveConfig.builder().path(staging()).pageSize(pageSize).partitions(partitions).dataRegionSize(64L << 20)
                .checkpointBufferSize(16L << 20).captureBufferSize(4L << 20).build();
    }
}
