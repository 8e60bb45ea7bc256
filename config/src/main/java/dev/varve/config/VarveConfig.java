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

    private final ConfigFields fields;

    private VarveConfig(Builder b) {
        fields = b.fields.copy();
    }

    /** {@return a builder with every field at its default and no path} */
    public static Builder builder() {
        return new Builder(new ConfigFields());
    }

    /**
     * Loads a configuration from a {@link java.util.Properties} file with the {@code *_PROP_NAME}
     * keys. Sizes are a byte count or a number with a binary suffix {@code k}, {@code m}, {@code g}
     * or {@code t} ({@code 64m}); durations are ISO-8601 ({@code PT30S}) or a number with a unit
     * {@code ms}, {@code s}, {@code m}, {@code h} or {@code d} ({@code 150ms}); enums are
     * case-insensitive. Relative paths are resolved against the file's directory. A leading byte-order mark is
     * skipped. Keys without the {@value ConfigLimits#PREFIX} prefix are ignored; unknown keys with it, or with it in
     * another case ({@code Varve.pageSize}), are rejected.
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
     * {@link #load(Path)} for the store in {@code path}: the file need not set {@code varve.path}, and {@code path}
     * replaces it if it does (a tool given a store directory and a file of settings for it).
     *
     * @param propertiesFile the file to read
     * @param path           the store directory
     * @return the validated configuration
     * @throws IllegalArgumentException naming the key if a key is unknown or a value is invalid, or if {@code path} is null
     * @throws java.io.UncheckedIOException naming the file if it cannot be read
     */
    public static VarveConfig load(Path propertiesFile, Path path) {
        if (path == null) throw new IllegalArgumentException("path must not be null");
        return ConfigProperties.load(propertiesFile, path);
    }

    /**
     * Returns a builder holding this configuration's fields, to copy it with changes. An archive
     * path left at its default stays so, i.e. follows a changed {@link Builder#path(Path)}.
     *
     * @return a new builder
     */
    public Builder toBuilder() {
        return new Builder(fields.copy());
    }

    /** {@return the store directory} */
    public Path path() {
        return fields.path;
    }

    /** {@return the page size in bytes, a power of two} */
    public int pageSize() {
        return fields.pageSize;
    }

    /** {@return the off-heap page memory in bytes} */
    public long dataRegionSize() {
        return fields.dataRegionSize;
    }

    /** {@return the partitions per table} */
    public int partitions() {
        return fields.partitions;
    }

    /** {@return how a crash during a checkpoint is repaired} */
    public RecoveryMode recoveryMode() {
        return fields.recoveryMode;
    }

    /** {@return the compression of recovery page images} */
    public RecoveryCompression recoveryCompression() {
        return fields.recoveryCompression;
    }

    /** {@return when the WAL is forced to disk} */
    public WalSyncMode walSyncMode() {
        return fields.walSyncMode;
    }

    /** {@return the WAL segment file size in bytes} */
    public long walSegmentSize() {
        return fields.walSegmentSize;
    }

    /** {@return the interval of the background WAL fsync in {@link WalSyncMode#BACKGROUND} mode} */
    public Duration walFlushFrequency() {
        return fields.walFlushFrequency;
    }

    /** {@return the interval between checkpoints} */
    public Duration checkpointFrequency() {
        return fields.checkpointFrequency;
    }

    /** {@return the threads writing pages during a checkpoint} */
    public int checkpointThreads() {
        return fields.checkpointThreads;
    }

    /** {@return the threads replaying partitions in parallel at recovery (at most one per core is used)} */
    public int recoveryThreads() {
        return fields.recoveryThreads;
    }

    /** {@return the checkpoint copy-on-write buffer in bytes} */
    public long checkpointBufferSize() {
        return fields.checkpointBufferSize;
    }

    /** {@return the dirty share of the data region that triggers a checkpoint} */
    public double checkpointDirtyRatio() {
        return fields.checkpointDirtyRatio;
    }

    /** {@return the WAL bytes since the last checkpoint that trigger a checkpoint} */
    public long checkpointWalVolume() {
        return fields.checkpointWalVolume;
    }

    /** {@return Skippy levels above the Maplog} */
    public int skippyLevels() {
        return fields.skippyLevels;
    }

    /** {@return mappings per Skippy node} */
    public int skippyNodeEntries() {
        return fields.skippyNodeEntries;
    }

    /** {@return the capture buffer size in bytes} */
    public long captureBufferSize() {
        return fields.captureBufferSize;
    }

    /** {@return the archive (Pagelog) segment size in bytes} */
    public long archiveSegmentSize() {
        return fields.archiveSegmentSize;
    }

    /** {@return the hybrid page window W: the most recent snapshots always read page-based} */
    public int snapshotPageWindow() {
        return fields.snapshotPageWindow;
    }

    /** {@return the longest chain of diffs from an archived pre-state to a whole page; 0: every pre-state a whole page} */
    public int snapshotDiffChain() {
        return fields.snapshotDiffChain;
    }

    /** {@return the snapshot retention policy} */
    public RankTreePolicy retention() {
        return fields.retention;
    }

    /** {@return the snapshot archive directory: as set, or {@code path().resolve("archive")}} */
    public Path archivePath() {
        return fields.archivePath != null ? fields.archivePath : fields.path.resolve(ARCHIVE_PATH_DEFAULT_NAME);
    }

    /**
     * {@return the store's name: the one given, else the absolute, normalized store path, with control characters
     * and unpaired surrogates (which a given name may not hold) escaped as a backslash, u and four hex digits}
     */
    public String name() {
        return fields.name != null ? fields.name : ConfigValidation.escaped(fields.path.toAbsolutePath().normalize().toString());
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
        return "VarveConfig{path=" + fields.path + ", pageSize=" + fields.pageSize + ", dataRegionSize=" + fields.dataRegionSize
                + ", partitions=" + fields.partitions + ", recoveryMode=" + fields.recoveryMode
                + ", recoveryCompression=" + fields.recoveryCompression + ", walSyncMode=" + fields.walSyncMode
                + ", walSegmentSize=" + fields.walSegmentSize + ", walFlushFrequency=" + fields.walFlushFrequency
                + ", checkpointFrequency=" + fields.checkpointFrequency + ", checkpointThreads=" + fields.checkpointThreads
                + ", recoveryThreads=" + fields.recoveryThreads
                + ", checkpointBufferSize=" + fields.checkpointBufferSize + ", checkpointDirtyRatio=" + fields.checkpointDirtyRatio
                + ", checkpointWalVolume=" + fields.checkpointWalVolume + ", skippyLevels=" + fields.skippyLevels
                + ", skippyNodeEntries=" + fields.skippyNodeEntries + ", captureBufferSize=" + fields.captureBufferSize
                + ", archiveSegmentSize=" + fields.archiveSegmentSize + ", snapshotPageWindow=" + fields.snapshotPageWindow
                + ", snapshotDiffChain=" + fields.snapshotDiffChain
                + ", retention=" + fields.retention
                + ", archivePath=" + archivePath() + ", name=" + name() + "}";
    }

    /** Collects the fields of a {@link VarveConfig}; {@link #build()} validates them. Not thread-safe. */
    public static final class Builder {
        private final ConfigFields fields;

        private Builder(ConfigFields fields) {
            this.fields = fields;
        }

        /**
         * Sets the store directory, required.
         * @param v the store directory, required
         * @return this builder
         */
        public Builder path(Path v) {
            fields.path = v;
            return this;
        }

        /**
         * Sets the page size in bytes, see {@link ConfigLimits#PAGE_SIZE_PROP_NAME}.
         * @param v the new value
         * @return this builder
         */
        public Builder pageSize(int v) {
            fields.pageSize = v;
            return this;
        }

        /**
         * Sets the data region size in bytes, see {@link ConfigLimits#DATA_REGION_SIZE_PROP_NAME}.
         * @param v the new value
         * @return this builder
         */
        public Builder dataRegionSize(long v) {
            fields.dataRegionSize = v;
            return this;
        }

        /**
         * Sets the partitions per table, see {@link ConfigLimits#PARTITIONS_PROP_NAME}.
         * @param v the new value
         * @return this builder
         */
        public Builder partitions(int v) {
            fields.partitions = v;
            return this;
        }

        /**
         * Sets the recovery mode, see {@link ConfigLimits#RECOVERY_MODE_PROP_NAME}.
         * @param v the new value
         * @return this builder
         */
        public Builder recoveryMode(RecoveryMode v) {
            fields.recoveryMode = v;
            return this;
        }

        /**
         * Sets the recovery compression, see {@link ConfigLimits#RECOVERY_COMPRESSION_PROP_NAME}.
         * @param v the new value
         * @return this builder
         */
        public Builder recoveryCompression(RecoveryCompression v) {
            fields.recoveryCompression = v;
            return this;
        }

        /**
         * Sets the WAL sync mode, see {@link ConfigLimits#WAL_SYNC_MODE_PROP_NAME}.
         * @param v the new value
         * @return this builder
         */
        public Builder walSyncMode(WalSyncMode v) {
            fields.walSyncMode = v;
            return this;
        }

        /**
         * Sets the WAL segment size in bytes, see {@link ConfigLimits#WAL_SEGMENT_SIZE_PROP_NAME}.
         * @param v the new value
         * @return this builder
         */
        public Builder walSegmentSize(long v) {
            fields.walSegmentSize = v;
            return this;
        }

        /**
         * Sets the WAL flush frequency, see {@link ConfigLimits#WAL_FLUSH_FREQUENCY_PROP_NAME}.
         * @param v the new value
         * @return this builder
         */
        public Builder walFlushFrequency(Duration v) {
            fields.walFlushFrequency = v;
            return this;
        }

        /**
         * Sets the checkpoint frequency, see {@link ConfigLimits#CHECKPOINT_FREQUENCY_PROP_NAME}.
         * @param v the new value
         * @return this builder
         */
        public Builder checkpointFrequency(Duration v) {
            fields.checkpointFrequency = v;
            return this;
        }

        /**
         * Sets the checkpoint threads, see {@link ConfigLimits#CHECKPOINT_THREADS_PROP_NAME}.
         * @param v the new value
         * @return this builder
         */
        public Builder checkpointThreads(int v) {
            fields.checkpointThreads = v;
            return this;
        }

        /**
         * Sets the recovery threads, see {@link ConfigLimits#RECOVERY_THREADS_PROP_NAME}.
         * @param v the new value
         * @return this builder
         */
        public Builder recoveryThreads(int v) {
            fields.recoveryThreads = v;
            return this;
        }

        /**
         * Sets the checkpoint buffer size in bytes, see {@link ConfigLimits#CHECKPOINT_BUFFER_SIZE_PROP_NAME}.
         * @param v the new value
         * @return this builder
         */
        public Builder checkpointBufferSize(long v) {
            fields.checkpointBufferSize = v;
            return this;
        }

        /**
         * Sets the checkpoint dirty ratio, see {@link ConfigLimits#CHECKPOINT_DIRTY_RATIO_PROP_NAME}.
         * @param v the new value
         * @return this builder
         */
        public Builder checkpointDirtyRatio(double v) {
            fields.checkpointDirtyRatio = v;
            return this;
        }

        /**
         * Sets the checkpoint WAL volume in bytes, see {@link ConfigLimits#CHECKPOINT_WAL_VOLUME_PROP_NAME}.
         * @param v the new value
         * @return this builder
         */
        public Builder checkpointWalVolume(long v) {
            fields.checkpointWalVolume = v;
            return this;
        }

        /**
         * Sets the Skippy levels, see {@link ConfigLimits#SKIPPY_LEVELS_PROP_NAME}.
         * @param v the new value
         * @return this builder
         */
        public Builder skippyLevels(int v) {
            fields.skippyLevels = v;
            return this;
        }

        /**
         * Sets the Skippy node size in mappings, see {@link ConfigLimits#SKIPPY_NODE_ENTRIES_PROP_NAME}.
         * @param v the new value
         * @return this builder
         */
        public Builder skippyNodeEntries(int v) {
            fields.skippyNodeEntries = v;
            return this;
        }

        /**
         * Sets the capture buffer size in bytes, see {@link ConfigLimits#CAPTURE_BUFFER_SIZE_PROP_NAME}.
         * @param v the new value
         * @return this builder
         */
        public Builder captureBufferSize(long v) {
            fields.captureBufferSize = v;
            return this;
        }

        /**
         * Sets the archive segment size in bytes, see {@link ConfigLimits#ARCHIVE_SEGMENT_SIZE_PROP_NAME}.
         * @param v the new value
         * @return this builder
         */
        public Builder archiveSegmentSize(long v) {
            fields.archiveSegmentSize = v;
            return this;
        }

        /**
         * Sets the hybrid page window W in snapshots, see {@link ConfigLimits#SNAPSHOT_PAGE_WINDOW_PROP_NAME}.
         * @param v the new value
         * @return this builder
         */
        public Builder snapshotPageWindow(int v) {
            fields.snapshotPageWindow = v;
            return this;
        }

        /** Sets the longest diff chain of an archived pre-state, see {@link ConfigLimits#SNAPSHOT_DIFF_CHAIN_PROP_NAME}. */
        public Builder snapshotDiffChain(int v) {
            fields.snapshotDiffChain = v;
            return this;
        }

        /**
         * Sets the snapshot retention policy, see {@link ConfigLimits#RETENTION_PROP_NAME}.
         * @param v the new value
         * @return this builder
         */
        public Builder retention(RankTreePolicy v) {
            fields.retention = v;
            return this;
        }

        /**
         * Sets the archive directory, or null for {@code path.resolve("archive")}.
         * @param v the archive directory, or null for {@code path.resolve("archive")}
         * @return this builder
         */
        public Builder archivePath(Path v) {
            fields.archivePath = v;
            return this;
        }

        /**
         * Sets the store's name, see {@link ConfigLimits#NAME_PROP_NAME}.
         * @param v 1 to {@link ConfigLimits#NAME_MAX_LENGTH} characters without control characters or unpaired surrogates, or
         *          null for the store path
         * @return this builder
         */
        public Builder name(String v) {
            fields.name = v;
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
            ConfigValidation.check(c, fields.archivePath, fields.name);
            return c;
        }
    }
}
