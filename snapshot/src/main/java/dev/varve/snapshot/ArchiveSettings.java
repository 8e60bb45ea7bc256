package dev.varve.snapshot;

import dev.varve.config.ConfigLimits;
import dev.varve.config.RankTreePolicy;

import java.nio.file.Path;

/**
 * How a {@link SnapshotArchive} is laid out and sized: its directory, the page size, the Skippy height and node size,
 * the capture buffer, the Pagelog segment size, the rank-tree retention policy and the hybrid page window W. Built
 * with {@link #builder}, whose defaults and limits are the store's ({@link ConfigLimits}), so an archive opened
 * with a store's validated settings accepts them all; a bad value is refused with an error naming the field.
 *
 * @param dir                the archive's directory, created if missing
 * @param pageSize           bytes per page (and per archived pre-state), a power of two
 * @param skippyLevels       Skippy levels above each Maplog (0: plain Maplog scans)
 * @param skippyNodeEntries  mappings per Skippy node
 * @param captureBufferBytes the capture buffer pre-states wait in for the archiver, a multiple of the page size
 * @param segmentBytes       Pagelog segment size: the unit reclamation gives back
 * @param retention          the rank-tree policy; its level count is the archive's
 * @param pageWindow         W: lazily ranked snapshots are copied into their level once W newer ones exist
 * @param diffChain          the longest chain of diffs from an archived pre-state to a whole page (0: whole pages only)
 * @param storeId            the store's id when a checkpoint marker holds it, else 0: Pagelog segments, log parts, the
 *                           snapshot log and ranked extents of another store are refused, and the ones written from
 *                           then on record it (see {@link SnapshotArchive#storeIdDurable})
 */
public record ArchiveSettings(Path dir, int pageSize, int skippyLevels, int skippyNodeEntries, long captureBufferBytes, long segmentBytes,
                              RankTreePolicy retention, int pageWindow, int diffChain, long storeId) {

    /** Checks every field, naming the first one out of range. */
    public ArchiveSettings {
        if (dir == null) throw new IllegalArgumentException("dir is required");
        if (retention == null) throw new IllegalArgumentException("retention is required");
        if (pageSize < ConfigLimits.PAGE_SIZE_MIN || pageSize > ConfigLimits.PAGE_SIZE_MAX || Integer.bitCount(pageSize) != 1)
            throw new IllegalArgumentException("pageSize must be a power of two in [" + ConfigLimits.PAGE_SIZE_MIN + ", " + ConfigLimits.PAGE_SIZE_MAX
                    + "], was " + pageSize);
        inRange("skippyLevels", skippyLevels, ConfigLimits.SKIPPY_LEVELS_MIN, ConfigLimits.SKIPPY_LEVELS_MAX);
        inRange("skippyNodeEntries", skippyNodeEntries, ConfigLimits.SKIPPY_NODE_ENTRIES_MIN, ConfigLimits.SKIPPY_NODE_ENTRIES_MAX);
        inRange("captureBufferBytes", captureBufferBytes, ConfigLimits.CAPTURE_BUFFER_SIZE_MIN, ConfigLimits.CAPTURE_BUFFER_SIZE_MAX);
        if (captureBufferBytes % pageSize != 0)
            throw new IllegalArgumentException("captureBufferBytes must be a multiple of pageSize (" + pageSize + "), was " + captureBufferBytes);
        inRange("segmentBytes", segmentBytes, ConfigLimits.ARCHIVE_SEGMENT_SIZE_MIN, ConfigLimits.ARCHIVE_SEGMENT_SIZE_MAX);
        inRange("pageWindow", pageWindow, ConfigLimits.SNAPSHOT_PAGE_WINDOW_MIN, ConfigLimits.SNAPSHOT_PAGE_WINDOW_MAX);
        inRange("diffChain", diffChain, ConfigLimits.SNAPSHOT_DIFF_CHAIN_MIN, ConfigLimits.SNAPSHOT_DIFF_CHAIN_MAX);
    }

    private static void inRange(String field, long value, long min, long max) {
        if (value < min || value > max) throw new IllegalArgumentException(field + " must be in [" + min + ", " + max + "], was " + value);
    }

    /** Settings for an archive in {@code dir} kept by {@code retention}; every other field starts at the store's default. */
    public static Builder builder(Path dir, RankTreePolicy retention) {
        return new Builder(dir, retention);
    }

    /** Named setters instead of nine positional parameters; {@link #build} validates. */
    public static final class Builder {
        private final Path dir;
        private final RankTreePolicy retention;
        private int pageSize = ConfigLimits.PAGE_SIZE_DEFAULT;
        private int skippyLevels = ConfigLimits.SKIPPY_LEVELS_DEFAULT;
        private int skippyNodeEntries = ConfigLimits.SKIPPY_NODE_ENTRIES_DEFAULT;
        private long captureBufferBytes = ConfigLimits.CAPTURE_BUFFER_SIZE_DEFAULT;
        private long segmentBytes = ConfigLimits.ARCHIVE_SEGMENT_SIZE_DEFAULT;
        private int pageWindow = ConfigLimits.SNAPSHOT_PAGE_WINDOW_DEFAULT;
        private int diffChain = ConfigLimits.SNAPSHOT_DIFF_CHAIN_DEFAULT;
        private long storeId;

        private Builder(Path dir, RankTreePolicy retention) {
            this.dir = dir;
            this.retention = retention;
        }

        public Builder pageSize(int bytes) {
            this.pageSize = bytes;
            return this;
        }

        public Builder skippyLevels(int levels) {
            this.skippyLevels = levels;
            return this;
        }

        public Builder skippyNodeEntries(int entries) {
            this.skippyNodeEntries = entries;
            return this;
        }

        public Builder captureBufferBytes(long bytes) {
            this.captureBufferBytes = bytes;
            return this;
        }

        public Builder segmentBytes(long bytes) {
            this.segmentBytes = bytes;
            return this;
        }

        public Builder pageWindow(int snapshots) {
            this.pageWindow = snapshots;
            return this;
        }

        public Builder diffChain(int links) {
            this.diffChain = links;
            return this;
        }

        public Builder storeId(long id) {
            this.storeId = id;
            return this;
        }

        /** The settings, checked. */
        public ArchiveSettings build() {
            return new ArchiveSettings(dir, pageSize, skippyLevels, skippyNodeEntries, captureBufferBytes, segmentBytes, retention, pageWindow, diffChain,
                    storeId);
        }
    }
}
