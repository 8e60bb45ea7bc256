package dev.varve.config;

import static dev.varve.config.ConfigLimits.*;

import java.nio.file.Path;
import java.time.Duration;

/**
 * The settings of one {@link VarveConfig} as given, each at its {@link ConfigLimits} default until set: a
 * {@link VarveConfig.Builder} fills one, and each config it builds keeps a copy of its own that nothing changes after,
 * so the config stays immutable while the builder goes on. Apart from both so that each setting is declared and
 * defaulted in one place, not once in the builder and again in the config with field-by-field copies between them.
 */
final class ConfigFields implements Cloneable {
    Path path;
    int pageSize = PAGE_SIZE_DEFAULT;
    long dataRegionSize = DATA_REGION_SIZE_DEFAULT;
    int partitions = PARTITIONS_DEFAULT;
    RecoveryMode recoveryMode = RECOVERY_MODE_DEFAULT;
    RecoveryCompression recoveryCompression = RECOVERY_COMPRESSION_DEFAULT;
    WalSyncMode walSyncMode = WAL_SYNC_MODE_DEFAULT;
    long walSegmentSize = WAL_SEGMENT_SIZE_DEFAULT;
    Duration walFlushFrequency = WAL_FLUSH_FREQUENCY_DEFAULT;
    Duration checkpointFrequency = CHECKPOINT_FREQUENCY_DEFAULT;
    int checkpointThreads = CHECKPOINT_THREADS_DEFAULT;
    int recoveryThreads = RECOVERY_THREADS_DEFAULT;
    long checkpointBufferSize = CHECKPOINT_BUFFER_SIZE_DEFAULT;
    double checkpointDirtyRatio = CHECKPOINT_DIRTY_RATIO_DEFAULT;
    long checkpointWalVolume = CHECKPOINT_WAL_VOLUME_DEFAULT;
    int skippyLevels = SKIPPY_LEVELS_DEFAULT;
    int skippyNodeEntries = SKIPPY_NODE_ENTRIES_DEFAULT;
    long captureBufferSize = CAPTURE_BUFFER_SIZE_DEFAULT;
    long archiveSegmentSize = ARCHIVE_SEGMENT_SIZE_DEFAULT;
    int snapshotPageWindow = SNAPSHOT_PAGE_WINDOW_DEFAULT;
    int snapshotDiffChain = SNAPSHOT_DIFF_CHAIN_DEFAULT;
    RankTreePolicy retention = RETENTION_DEFAULT;
    /** Null means {@code path.resolve(ARCHIVE_PATH_DEFAULT_NAME)}. */
    Path archivePath;
    /** Null means the absolute, normalized path. */
    String name;

    /**
     * {@return a copy} Shallow, as every field is an immutable value; a clone, so that a setting added later is copied
     * without a line here to remember.
     */
    ConfigFields copy() {
        try {
            return (ConfigFields) clone();
        } catch (CloneNotSupportedException e) {
            throw new AssertionError(e); // not thrown: this class is Cloneable
        }
    }
}
