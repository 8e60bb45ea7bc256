package dev.varve.config;

import static dev.varve.config.ConfigLimits.*;

import java.nio.file.Path;
import java.time.Duration;

/**
 * The immutable configuration of a Varve store, made with {@link #builder()} or {@link #load(Path)}.
 *
 * <p>Each field's property name, default and allowed range are in {@link ConfigLimits}.
 * {@link Builder#build()} validates every field and the fields against each other; its
 * {@link IllegalArgumentException} names the field, the allowed range and the value. Sizes are in bytes.
 */
public final class VarveConfig {

    private final Path path;
    private final int pageSize;
    private final long dataRegionSize;
    private final int partitions;
    private final RecoveryMode recoveryMode;
    private final RecoveryCompression recoveryCompression;
    private final WalSyncMode walSyncMode;
    private final long walSegmentSize;
    private final Duration walFlushFrequency;
    private final Duration checkpointFrequency;
    private final int checkpointThreads;
    private final int recoveryThreads;
    private final long checkpointBufferSize;
    private final double checkpointDirtyRatio;
    private final long checkpointWalVolume;
    private final int skippyLevels;
    private final int skippyNodeEntries;
    private final long captureBufferSize;
    private final long archiveSegmentSize;
    private final int snapshotPageWindow;
    private final int snapshotDiffChain;
    private final RankTreePolicy retention;
    /** As given: null means {@code path.resolve(ARCHIVE_PATH_DEFAULT_NAME)}. */
    private final Path archivePathGiven;
    /** As given: null means the absolute path. */
    private final String nameGiven;

    private VarveConfig(Builder b) {
        path = b.path;
        pageSize = b.pageSize;
        dataRegionSize = b.dataRegionSize;
        partitions = b.partitions;
        recoveryMode = b.recoveryMode;
        recoveryCompression = b.recoveryCompression;
        walSyncMode = b.walSyncMode;
        walSegmentSize = b.walSegmentSize;
        walFlushFrequency = b.walFlushFrequency;
        checkpointFrequency = b.checkpointFrequency;
        checkpointThreads = b.checkpointThreads;
        recoveryThreads = b.recoveryThreads;
        checkpointBufferSize = b.checkpointBufferSize;
        checkpointDirtyRatio = b.checkpointDirtyRatio;
        checkpointWalVolume = b.checkpointWalVolume;
        skippyLevels = b.skippyLevels;
        skippyNodeEntries = b.skippyNodeEntries;
        captureBufferSize = b.captureBufferSize;
        archiveSegmentSize = b.archiveSegmentSize;
        snapshotPageWindow = b.snapshotPageWindow;
        snapshotDiffChain = b.snapshotDiffChain;
        retention = b.retention;
        archivePathGiven = b.archivePath;
        nameGiven = b.name;
    }

    /** {@return a builder with every field at its default and no path} */
    public static Builder builder() {
        return new Builder();
    }

    /**
     * Loads a configuration from a {@link java.util.Properties} file with the {@code *_PROP_NAME}
     * keys. Sizes are a byte count or a number with a binary suffix {@code k}, {@code m}, {@code g}
     * or {@code t} ({@code 64m}); durations are ISO-8601 ({@code PT30S}) or a number with a unit
     * {@code ms}, {@code s}, {@code m}, {@code h} or {@code d} ({@code 150ms}); enums are
     * case-insensitive. Relative paths are resolved against the file's directory. Keys without the
     * {@value ConfigLimits#PREFIX} prefix are ignored; unknown keys with it are rejected.
     *
     * @param propertiesFile the file to read
     * @return the validated configuration
     * @throws IllegalArgumentException naming the key if a key is unknown or a value is invalid
     * @throws java.io.UncheckedIOException naming the file if it cannot be read
     */
    public static VarveConfig load(Path propertiesFile) {
        return ConfigProperties.load(propertiesFile);
    }

    /**
     * Returns a builder holding this configuration's fields, to copy it with changes. An archive
     * path left at its default stays so, i.e. follows a changed {@link Builder#path(Path)}.
     *
     * @return a new builder
     */
    public Builder toBuilder() {
        return new Builder().path(path).pageSize(pageSize).dataRegionSize(dataRegionSize).partitions(partitions)
                .recoveryMode(recoveryMode).recoveryCompression(recoveryCompression).walSyncMode(walSyncMode)
                .walSegmentSize(walSegmentSize).walFlushFrequency(walFlushFrequency)
                .checkpointFrequency(checkpointFrequency).checkpointThreads(checkpointThreads).recoveryThreads(recoveryThreads)
                .checkpointBufferSize(checkpointBufferSize).checkpointDirtyRatio(checkpointDirtyRatio)
                .checkpointWalVolume(checkpointWalVolume).skippyLevels(skippyLevels).skippyNodeEntries(skippyNodeEntries)
                .captureBufferSize(captureBufferSize).archiveSegmentSize(archiveSegmentSize)
                .snapshotPageWindow(snapshotPageWindow).snapshotDiffChain(snapshotDiffChain).retention(retention).archivePath(archivePathGiven).name(nameGiven);
    }

    /** {@return the store directory} */
    public Path path() {
        return path;
    }

    /** {@return the page size in bytes, a power of two} */
    public int pageSize() {
        return pageSize;
    }

    /** {@return the off-heap page memory in bytes} */
    public long dataRegionSize() {
        return dataRegionSize;
    }

    /** {@return the partitions per table} */
    public int partitions() {
        return partitions;
    }

    /** {@return how a crash during a checkpoint is repaired} */
    public RecoveryMode recoveryMode() {
        return recoveryMode;
    }

    /** {@return the compression of recovery page images} */
    public RecoveryCompression recoveryCompression() {
        return recoveryCompression;
    }

    /** {@return when the WAL is forced to disk} */
    public WalSyncMode walSyncMode() {
        return walSyncMode;
    }

    /** {@return the WAL segment file size in bytes} */
    public long walSegmentSize() {
        return walSegmentSize;
    }

    /** {@return the interval of the background WAL fsync in {@link WalSyncMode#BACKGROUND} mode} */
    public Duration walFlushFrequency() {
        return walFlushFrequency;
    }

    /** {@return the interval between checkpoints} */
    public Duration checkpointFrequency() {
        return checkpointFrequency;
    }

    /** {@return the threads writing pages during a checkpoint} */
    public int checkpointThreads() {
        return checkpointThreads;
    }

    /** {@return the threads replaying partitions in parallel at recovery (at most one per core is used)} */
    public int recoveryThreads() {
        return recoveryThreads;
    }

    /** {@return the checkpoint copy-on-write buffer in bytes} */
    public long checkpointBufferSize() {
        return checkpointBufferSize;
    }

    /** {@return the dirty share of the data region that triggers a checkpoint} */
    public double checkpointDirtyRatio() {
        return checkpointDirtyRatio;
    }

    /** {@return the WAL bytes since the last checkpoint that trigger a checkpoint} */
    public long checkpointWalVolume() {
        return checkpointWalVolume;
    }

    /** {@return Skippy levels above the Maplog} */
    public int skippyLevels() {
        return skippyLevels;
    }

    /** {@return mappings per Skippy node} */
    public int skippyNodeEntries() {
        return skippyNodeEntries;
    }

    /** {@return the capture buffer size in bytes} */
    public long captureBufferSize() {
        return captureBufferSize;
    }

    /** {@return the archive (Pagelog) segment size in bytes} */
    public long archiveSegmentSize() {
        return archiveSegmentSize;
    }

    /** {@return the hybrid page window W: the most recent snapshots always read page-based} */
    public int snapshotPageWindow() {
        return snapshotPageWindow;
    }

    /** {@return the longest chain of diffs from an archived pre-state to a whole page; 0: every pre-state a whole page} */
    public int snapshotDiffChain() {
        return snapshotDiffChain;
    }

    /** {@return the snapshot retention policy} */
    public RankTreePolicy retention() {
        return retention;
    }

    /** {@return the snapshot archive directory: as set, or {@code path().resolve("archive")}} */
    public Path archivePath() {
        return archivePathGiven != null ? archivePathGiven : path.resolve(ARCHIVE_PATH_DEFAULT_NAME);
    }

    /** {@return the store's name: the one given, else the absolute, normalized store path} */
    public String name() {
        return nameGiven != null ? nameGiven : path.toAbsolutePath().normalize().toString();
    }

    @Override
    public boolean equals(Object o) {
        return o instanceof VarveConfig c && toString().equals(c.toString());
    }

    @Override
    public int hashCode() {
        return toString().hashCode();
    }

    /** Returns every field, e.g. {@code VarveConfig{path=/data, pageSize=4096, ...}}. */
    @Override
    public String toString() {
        return "VarveConfig{path=" + path + ", pageSize=" + pageSize + ", dataRegionSize=" + dataRegionSize
                + ", partitions=" + partitions + ", recoveryMode=" + recoveryMode
                + ", recoveryCompression=" + recoveryCompression + ", walSyncMode=" + walSyncMode
                + ", walSegmentSize=" + walSegmentSize + ", walFlushFrequency=" + walFlushFrequency
                + ", checkpointFrequency=" + checkpointFrequency + ", checkpointThreads=" + checkpointThreads + ", recoveryThreads=" + recoveryThreads
                + ", checkpointBufferSize=" + checkpointBufferSize + ", checkpointDirtyRatio=" + checkpointDirtyRatio
                + ", checkpointWalVolume=" + checkpointWalVolume + ", skippyLevels=" + skippyLevels
                + ", skippyNodeEntries=" + skippyNodeEntries + ", captureBufferSize=" + captureBufferSize
                + ", archiveSegmentSize=" + archiveSegmentSize + ", snapshotPageWindow=" + snapshotPageWindow + ", snapshotDiffChain=" + snapshotDiffChain
                + ", retention=" + retention
                + ", archivePath=" + archivePath() + ", name=" + name() + "}";
    }

    /** Collects the fields of a {@link VarveConfig}; {@link #build()} validates them. Not thread-safe. */
    public static final class Builder {
        private Path path;
        private int pageSize = PAGE_SIZE_DEFAULT;
        private long dataRegionSize = DATA_REGION_SIZE_DEFAULT;
        private int partitions = PARTITIONS_DEFAULT;
        private RecoveryMode recoveryMode = RECOVERY_MODE_DEFAULT;
        private RecoveryCompression recoveryCompression = RECOVERY_COMPRESSION_DEFAULT;
        private WalSyncMode walSyncMode = WAL_SYNC_MODE_DEFAULT;
        private long walSegmentSize = WAL_SEGMENT_SIZE_DEFAULT;
        private Duration walFlushFrequency = WAL_FLUSH_FREQUENCY_DEFAULT;
        private Duration checkpointFrequency = CHECKPOINT_FREQUENCY_DEFAULT;
        private int checkpointThreads = CHECKPOINT_THREADS_DEFAULT;
        private int recoveryThreads = RECOVERY_THREADS_DEFAULT;
        private long checkpointBufferSize = CHECKPOINT_BUFFER_SIZE_DEFAULT;
        private double checkpointDirtyRatio = CHECKPOINT_DIRTY_RATIO_DEFAULT;
        private long checkpointWalVolume = CHECKPOINT_WAL_VOLUME_DEFAULT;
        private int skippyLevels = SKIPPY_LEVELS_DEFAULT;
        private int skippyNodeEntries = SKIPPY_NODE_ENTRIES_DEFAULT;
        private long captureBufferSize = CAPTURE_BUFFER_SIZE_DEFAULT;
        private long archiveSegmentSize = ARCHIVE_SEGMENT_SIZE_DEFAULT;
        private int snapshotPageWindow = SNAPSHOT_PAGE_WINDOW_DEFAULT;
        private int snapshotDiffChain = SNAPSHOT_DIFF_CHAIN_DEFAULT;
        private RankTreePolicy retention = RETENTION_DEFAULT;
        private Path archivePath;
        private String name;

        private Builder() {
        }

        /**
         * Sets the store directory, required.
         * @param v the store directory, required
         * @return this builder
         */
        public Builder path(Path v) {
            path = v;
            return this;
        }

        /**
         * Sets the page size in bytes, see {@link ConfigLimits#PAGE_SIZE_PROP_NAME}.
         * @param v the new value
         * @return this builder
         */
        public Builder pageSize(int v) {
            pageSize = v;
            return this;
        }

        /**
         * Sets the data region size in bytes, see {@link ConfigLimits#DATA_REGION_SIZE_PROP_NAME}.
         * @param v the new value
         * @return this builder
         */
        public Builder dataRegionSize(long v) {
            dataRegionSize = v;
            return this;
        }

        /**
         * Sets the partitions per table, see {@link ConfigLimits#PARTITIONS_PROP_NAME}.
         * @param v the new value
         * @return this builder
         */
        public Builder partitions(int v) {
            partitions = v;
            return this;
        }

        /**
         * Sets the recovery mode, see {@link ConfigLimits#RECOVERY_MODE_PROP_NAME}.
         * @param v the new value
         * @return this builder
         */
        public Builder recoveryMode(RecoveryMode v) {
            recoveryMode = v;
            return this;
        }

        /**
         * Sets the recovery compression, see {@link ConfigLimits#RECOVERY_COMPRESSION_PROP_NAME}.
         * @param v the new value
         * @return this builder
         */
        public Builder recoveryCompression(RecoveryCompression v) {
            recoveryCompression = v;
            return this;
        }

        /**
         * Sets the WAL sync mode, see {@link ConfigLimits#WAL_SYNC_MODE_PROP_NAME}.
         * @param v the new value
         * @return this builder
         */
        public Builder walSyncMode(WalSyncMode v) {
            walSyncMode = v;
            return this;
        }

        /**
         * Sets the WAL segment size in bytes, see {@link ConfigLimits#WAL_SEGMENT_SIZE_PROP_NAME}.
         * @param v the new value
         * @return this builder
         */
        public Builder walSegmentSize(long v) {
            walSegmentSize = v;
            return this;
        }

        /**
         * Sets the WAL flush frequency, see {@link ConfigLimits#WAL_FLUSH_FREQUENCY_PROP_NAME}.
         * @param v the new value
         * @return this builder
         */
        public Builder walFlushFrequency(Duration v) {
            walFlushFrequency = v;
            return this;
        }

        /**
         * Sets the checkpoint frequency, see {@link ConfigLimits#CHECKPOINT_FREQUENCY_PROP_NAME}.
         * @param v the new value
         * @return this builder
         */
        public Builder checkpointFrequency(Duration v) {
            checkpointFrequency = v;
            return this;
        }

        /**
         * Sets the checkpoint threads, see {@link ConfigLimits#CHECKPOINT_THREADS_PROP_NAME}.
         * @param v the new value
         * @return this builder
         */
        public Builder checkpointThreads(int v) {
            checkpointThreads = v;
            return this;
        }

        /**
         * Sets the recovery threads, see {@link ConfigLimits#RECOVERY_THREADS_PROP_NAME}.
         * @param v the new value
         * @return this builder
         */
        public Builder recoveryThreads(int v) {
            recoveryThreads = v;
            return this;
        }

        /**
         * Sets the checkpoint buffer size in bytes, see {@link ConfigLimits#CHECKPOINT_BUFFER_SIZE_PROP_NAME}.
         * @param v the new value
         * @return this builder
         */
        public Builder checkpointBufferSize(long v) {
            checkpointBufferSize = v;
            return this;
        }

        /**
         * Sets the checkpoint dirty ratio, see {@link ConfigLimits#CHECKPOINT_DIRTY_RATIO_PROP_NAME}.
         * @param v the new value
         * @return this builder
         */
        public Builder checkpointDirtyRatio(double v) {
            checkpointDirtyRatio = v;
            return this;
        }

        /**
         * Sets the checkpoint WAL volume in bytes, see {@link ConfigLimits#CHECKPOINT_WAL_VOLUME_PROP_NAME}.
         * @param v the new value
         * @return this builder
         */
        public Builder checkpointWalVolume(long v) {
            checkpointWalVolume = v;
            return this;
        }

        /**
         * Sets the Skippy levels, see {@link ConfigLimits#SKIPPY_LEVELS_PROP_NAME}.
         * @param v the new value
         * @return this builder
         */
        public Builder skippyLevels(int v) {
            skippyLevels = v;
            return this;
        }

        /**
         * Sets the Skippy node size in mappings, see {@link ConfigLimits#SKIPPY_NODE_ENTRIES_PROP_NAME}.
         * @param v the new value
         * @return this builder
         */
        public Builder skippyNodeEntries(int v) {
            skippyNodeEntries = v;
            return this;
        }

        /**
         * Sets the capture buffer size in bytes, see {@link ConfigLimits#CAPTURE_BUFFER_SIZE_PROP_NAME}.
         * @param v the new value
         * @return this builder
         */
        public Builder captureBufferSize(long v) {
            captureBufferSize = v;
            return this;
        }

        /**
         * Sets the archive segment size in bytes, see {@link ConfigLimits#ARCHIVE_SEGMENT_SIZE_PROP_NAME}.
         * @param v the new value
         * @return this builder
         */
        public Builder archiveSegmentSize(long v) {
            archiveSegmentSize = v;
            return this;
        }

        /**
         * Sets the hybrid page window W in snapshots, see {@link ConfigLimits#SNAPSHOT_PAGE_WINDOW_PROP_NAME}.
         * @param v the new value
         * @return this builder
         */
        public Builder snapshotPageWindow(int v) {
            snapshotPageWindow = v;
            return this;
        }

        /** Sets the longest diff chain of an archived pre-state, see {@link ConfigLimits#SNAPSHOT_DIFF_CHAIN_PROP_NAME}. */
        public Builder snapshotDiffChain(int v) {
            snapshotDiffChain = v;
            return this;
        }

        /**
         * Sets the snapshot retention policy, see {@link ConfigLimits#RETENTION_PROP_NAME}.
         * @param v the new value
         * @return this builder
         */
        public Builder retention(RankTreePolicy v) {
            retention = v;
            return this;
        }

        /**
         * Sets the archive directory, or null for {@code path.resolve("archive")}.
         * @param v the archive directory, or null for {@code path.resolve("archive")}
         * @return this builder
         */
        public Builder archivePath(Path v) {
            archivePath = v;
            return this;
        }

        /**
         * Sets the store's name, see {@link ConfigLimits#NAME_PROP_NAME}.
         * @param v 1 to {@link ConfigLimits#NAME_MAX_LENGTH} characters without control characters, or null for the store path
         * @return this builder
         */
        public Builder name(String v) {
            name = v;
            return this;
        }

        /**
         * Validates every field and the fields against each other.
         *
         * @return the configuration
         * @throws IllegalArgumentException naming the field, the allowed range and the value given
         */
        public VarveConfig build() {
            VarveConfig c = new VarveConfig(this);
            ConfigValidation.check(c, archivePath, name);
            return c;
        }
    }
}
