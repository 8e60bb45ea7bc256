package dev.varve.config;

import static dev.varve.config.ConfigLimits.*;

import java.nio.file.Path;

/**
 * The checks {@link VarveConfig.Builder#build()} runs: every field against its range in {@link ConfigLimits}, then
 * the fields against each other. Each failure is an {@link IllegalArgumentException} naming the field, the allowed
 * range and the value given.
 */
final class ConfigValidation {
    private ConfigValidation() {
    }

    /**
     * The index of a name's first character unfit for it, or -1: a control character (a log line or metric label
     * would break at it) or an unpaired surrogate (UTF-8 has no encoding for it, so it would come back as '?').
     */
    static int firstUnfit(String name) {
        for (int i = 0; i < name.length(); i++) {
            char c = name.charAt(i);
            if (Character.isISOControl(c)) return i;
            if (Character.isHighSurrogate(c) && i + 1 < name.length() && Character.isLowSurrogate(name.charAt(i + 1))) i++;
            else if (Character.isSurrogate(c)) return i;
        }
        return -1;
    }

    /** {@code name} with what {@link #firstUnfit} finds escaped as a backslash, u and four hex digits: how the store path serves as its default name. */
    static String escaped(String name) {
        int at = firstUnfit(name);
        if (at < 0) return name;
        return name.substring(0, at) + String.format("\\u%04X", (int) name.charAt(at)) + escaped(name.substring(at + 1));
    }

    /**
     * Checks {@code c}; {@code archivePath} and {@code name} as the caller gave them (null for the defaults, which
     * are valid by construction).
     */
    static void check(VarveConfig c, Path archivePath, String name) {
        ConfigChecks.required("path", c.path());
        // Path.of("") is the working directory: a store there is nearly always a mistake (an unset variable)
        if (c.path().toString().isEmpty()) throw new IllegalArgumentException("path is empty; name the store's directory");
        ConfigChecks.powerOfTwo("pageSize", c.pageSize(), PAGE_SIZE_MIN, PAGE_SIZE_MAX);
        ConfigChecks.byteRange("dataRegionSize", c.dataRegionSize(), DATA_REGION_SIZE_MIN, DATA_REGION_SIZE_MAX);
        ConfigChecks.intRange("partitions", c.partitions(), PARTITIONS_MIN, PARTITIONS_MAX);
        ConfigChecks.required("recoveryMode", c.recoveryMode());
        ConfigChecks.required("recoveryCompression", c.recoveryCompression());
        ConfigChecks.required("walSyncMode", c.walSyncMode());
        ConfigChecks.byteRange("walSegmentSize", c.walSegmentSize(), WAL_SEGMENT_SIZE_MIN, WAL_SEGMENT_SIZE_MAX);
        ConfigChecks.multipleOf("walSegmentSize", c.walSegmentSize(), "the 4 KiB alignment", WAL_SEGMENT_ALIGNMENT);
        ConfigChecks.durationRange("walFlushFrequency", c.walFlushFrequency(),
                WAL_FLUSH_FREQUENCY_MIN, WAL_FLUSH_FREQUENCY_MAX);
        ConfigChecks.durationRange("checkpointFrequency", c.checkpointFrequency(),
                CHECKPOINT_FREQUENCY_MIN, CHECKPOINT_FREQUENCY_MAX);
        ConfigChecks.intRange("checkpointThreads", c.checkpointThreads(), CHECKPOINT_THREADS_MIN, CHECKPOINT_THREADS_MAX);
        ConfigChecks.intRange("recoveryThreads", c.recoveryThreads(), RECOVERY_THREADS_MIN, RECOVERY_THREADS_MAX);
        ConfigChecks.byteRange("checkpointBufferSize", c.checkpointBufferSize(),
                CHECKPOINT_BUFFER_SIZE_MIN, CHECKPOINT_BUFFER_SIZE_MAX);
        ConfigChecks.doubleRange("checkpointDirtyRatio", c.checkpointDirtyRatio(),
                CHECKPOINT_DIRTY_RATIO_MIN, CHECKPOINT_DIRTY_RATIO_MAX);
        ConfigChecks.byteRange("checkpointWalVolume", c.checkpointWalVolume(),
                CHECKPOINT_WAL_VOLUME_MIN, CHECKPOINT_WAL_VOLUME_MAX);
        ConfigChecks.intRange("skippyLevels", c.skippyLevels(), SKIPPY_LEVELS_MIN, SKIPPY_LEVELS_MAX);
        ConfigChecks.intRange("skippyNodeEntries", c.skippyNodeEntries(), SKIPPY_NODE_ENTRIES_MIN, SKIPPY_NODE_ENTRIES_MAX);
        ConfigChecks.byteRange("captureBufferSize", c.captureBufferSize(), CAPTURE_BUFFER_SIZE_MIN, CAPTURE_BUFFER_SIZE_MAX);
        ConfigChecks.byteRange("archiveSegmentSize", c.archiveSegmentSize(), ARCHIVE_SEGMENT_SIZE_MIN, ARCHIVE_SEGMENT_SIZE_MAX);
        ConfigChecks.intRange("snapshotPageWindow", c.snapshotPageWindow(), SNAPSHOT_PAGE_WINDOW_MIN, SNAPSHOT_PAGE_WINDOW_MAX);
        ConfigChecks.intRange("snapshotDiffChain", c.snapshotDiffChain(), SNAPSHOT_DIFF_CHAIN_MIN, SNAPSHOT_DIFF_CHAIN_MAX);
        ConfigChecks.required("retention", c.retention());
        if (name != null && (name.isEmpty() || name.length() > NAME_MAX_LENGTH || firstUnfit(name) >= 0)) {
            throw new IllegalArgumentException("name must be 1.." + NAME_MAX_LENGTH + " characters without control characters or unpaired"
                    + " surrogates, was '" + escaped(name) + "'");
        }

        // Fields against each other.
        ConfigChecks.multipleOf("dataRegionSize", c.dataRegionSize(), "pageSize", c.pageSize());
        if (c.dataRegionSize() / c.pageSize() < DATA_REGION_MIN_PAGES) {
            throw new IllegalArgumentException("dataRegionSize must hold at least " + DATA_REGION_MIN_PAGES
                    + " pages of pageSize " + c.pageSize() + " (" + ConfigChecks.bytes((long) DATA_REGION_MIN_PAGES * c.pageSize())
                    + "), was " + c.dataRegionSize() + " bytes");
        }
        // else every store.table(name) is refused: its creation would take more than the half of the region one change may
        long tablePages = 2L * tableCreationPages(c.partitions());
        if (c.dataRegionSize() / c.pageSize() < tablePages) {
            throw new IllegalArgumentException("dataRegionSize must hold at least " + tablePages + " pages ("
                    + ConfigChecks.bytes(tablePages * c.pageSize()) + " at pageSize " + c.pageSize() + ") for a table of partitions "
                    + c.partitions() + ", whose creation may take half the region, was " + c.dataRegionSize() + " bytes");
        }
        ConfigChecks.multipleOf("checkpointBufferSize", c.checkpointBufferSize(), "pageSize", c.pageSize());
        ConfigChecks.multipleOf("captureBufferSize", c.captureBufferSize(), "pageSize", c.pageSize());
        if (archivePath != null) {
            // as for path: Path.of("") is the working directory, so the archive would land wherever the process started
            if (archivePath.toString().isEmpty()) {
                throw new IllegalArgumentException("archivePath is empty; name the archive's directory, or leave it unset for <path>/archive");
            }
            ConfigChecks.archiveApart(c.path(), archivePath, STORE_DIRECTORIES);
        }
    }
}
