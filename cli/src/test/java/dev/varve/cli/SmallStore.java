package dev.varve.cli;

import dev.varve.config.VarveConfig;
import java.nio.file.Path;

/**
 * Configurations for the stores the tests write or read back, which hold a few thousand entries at most. Every open
 * zero-fills its data region, checkpoint buffer and capture buffer (256, 64 and 16 MiB by default, sized for an
 * application): sized here for the tests' stores, the layout (page size, partitions) left as the defaults.
 */
final class SmallStore {
    private SmallStore() {
    }

    /** The defaults with a 16 MiB data region and 1 MiB checkpoint and capture buffers: opens any store of the default layout. */
    static VarveConfig.Builder config(Path dir) {
        return VarveConfig.builder().path(dir).dataRegionSize(16L << 20).checkpointBufferSize(1L << 20).captureBufferSize(1L << 20);
    }

    /**
     * {@link #config} with 4 MiB WAL segments (64 MiB by default, each preallocated and, at every open, scanned to its
     * end): for a store the test creates, and opens again only with this same configuration.
     */
    static VarveConfig.Builder fresh(Path dir) {
        return config(dir).walSegmentSize(4L << 20);
    }
}
