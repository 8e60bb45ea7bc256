package dev.varve.server;

import dev.varve.config.VarveConfig;

import java.nio.file.Path;

/**
 * The configuration the tests open a store with when it holds a few MiB (or is only read): the received stores and
 * standbys they check, and the admin endpoint's stores. Every open zero-fills the data region, the checkpoint buffer and
 * the capture buffer in direct memory: 336 MiB with the defaults took about 2 s of CPU on the 2-core CI VM, where
 * these 34 MiB take a tenth of it. A store larger than the region still reads (clean pages are evicted).
 */
public final class SmallStore {
    /**
     * Holds every page of the follow tests' standbys (under 10 MiB): a killed one replays its WAL at open, and the pages
     * it replays stay dirty, never evicted (no-steal), until the open's checkpoint.
     */
    private static final long DATA_REGION_SIZE = 32L << 20;
    /** Few writes, few snapshots: the buffers' smallest sizes and then some. */
    private static final long BUFFER_SIZE = 1L << 20;

    private SmallStore() {
    }

    public static VarveConfig.Builder config(Path dir) {
        return VarveConfig.builder().path(dir).dataRegionSize(DATA_REGION_SIZE).checkpointBufferSize(BUFFER_SIZE).captureBufferSize(BUFFER_SIZE);
    }

    /**
     * {@link #config} with 4 MiB WAL segments (64 MiB by default: a new store writes two of zeros): for a store the
     * test creates, and opens again only with this same configuration (an existing WAL keeps its segment size).
     */
    public static VarveConfig.Builder fresh(Path dir) {
        return config(dir).walSegmentSize(4L << 20);
    }
}
