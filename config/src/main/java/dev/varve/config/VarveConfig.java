package dev.varve.config;

import static dev.varve.config.ConfigChecks.GiB;
import static dev.varve.config.ConfigChecks.KiB;
import static dev.varve.config.ConfigChecks.MiB;
import static dev.varve.config.ConfigChecks.TiB;

import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.Objects;

/**
 * The immutable configuration of a Varve store, made with {@link #builder()} or {@link #load(Path)}.
 *
 * <p>Each field has a property name constant ({@code *_PROP_NAME}, prefix {@value #PREFIX}) used by
 * {@link #load(Path)}, and a default ({@code *_DEFAULT}) and allowed range ({@code *_MIN},
 * {@code *_MAX}) side by side. {@link Builder#build()} validates every field and the fields against
 * each other; its {@link IllegalArgumentException} names the field, the allowed range and the value.
 * Sizes are in bytes.
 */
public final class VarveConfig {

    /** The prefix of every property name. */
    public static final String PREFIX = "varve.";

    /** Store directory, created if missing; required. A relative value in a file is resolved against the file's directory. */
    public static final String PATH_PROP_NAME = PREFIX + "path";

    /** Page size in bytes, a power of two. */
    public static final String PAGE_SIZE_PROP_NAME = PREFIX + "pageSize";
    /** Default page size: 4 KiB. */
    public static final int PAGE_SIZE_DEFAULT = 4096;
    /** Smallest page size. */
    public static final int PAGE_SIZE_MIN = 1024;
    /** Largest page size. */
    public static final int PAGE_SIZE_MAX = 16384;

    /** Off-heap page memory in bytes; a multiple of the page size holding at least {@value #DATA_REGION_MIN_PAGES} pages. */
    public static final String DATA_REGION_SIZE_PROP_NAME = PREFIX + "dataRegionSize";
    /** Default data region size: 256 MiB. */
    public static final long DATA_REGION_SIZE_DEFAULT = 256 * MiB;
    /** Smallest data region size: 8 MiB. */
    public static final long DATA_REGION_SIZE_MIN = 8 * MiB;
    /** Largest data region size: 1 TiB. */
    public static final long DATA_REGION_SIZE_MAX = TiB;
    /** Fewest pages the data region must hold. */
    public static final int DATA_REGION_MIN_PAGES = 2048;

    /** Partitions per table. */
    public static final String PARTITIONS_PROP_NAME = PREFIX + "partitions";
    /** Default partitions per table. */
    public static final int PARTITIONS_DEFAULT = 16;
    /** Fewest partitions per table. */
    public static final int PARTITIONS_MIN = 1;
    /** Most partitions per table. */
    public static final int PARTITIONS_MAX = 1024;

    /** How a crash during a checkpoint is repaired, see {@link RecoveryMode}. */
    public static final String RECOVERY_MODE_PROP_NAME = PREFIX + "recoveryMode";
    /** Default recovery mode. */
    public static final RecoveryMode RECOVERY_MODE_DEFAULT = RecoveryMode.CHECKPOINT_RECOVERY_FILE;

    /** Compression of recovery page images, see {@link RecoveryCompression}. */
    public static final String RECOVERY_COMPRESSION_PROP_NAME = PREFIX + "recoveryCompression";
    /** Default recovery compression. */
    public static final RecoveryCompression RECOVERY_COMPRESSION_DEFAULT = RecoveryCompression.SNAPPY;

    /** When the WAL is forced to disk, see {@link WalSyncMode}. */
    public static final String WAL_SYNC_MODE_PROP_NAME = PREFIX + "walSyncMode";
    /** Default WAL sync mode. */
    public static final WalSyncMode WAL_SYNC_MODE_DEFAULT = WalSyncMode.LOG_ONLY;

    /** WAL segment file size in bytes, a multiple of {@value #WAL_SEGMENT_ALIGNMENT}. */
    public static final String WAL_SEGMENT_SIZE_PROP_NAME = PREFIX + "walSegmentSize";
    /** Default WAL segment size: 64 MiB. */
    public static final long WAL_SEGMENT_SIZE_DEFAULT = 64 * MiB;
    /** Smallest WAL segment size: 4 MiB, so that a 1 MiB value plus record overhead always fits. */
    public static final long WAL_SEGMENT_SIZE_MIN = 4 * MiB;
    /** Largest WAL segment size: 1 GiB. */
    public static final long WAL_SEGMENT_SIZE_MAX = GiB;
    /** A WAL segment size must be a multiple of this. */
    public static final int WAL_SEGMENT_ALIGNMENT = 4096;

    /** Interval of the background WAL fsync in {@link WalSyncMode#BACKGROUND} mode. */
    public static final String WAL_FLUSH_FREQUENCY_PROP_NAME = PREFIX + "walFlushFrequency";
    /** Default WAL flush frequency: 1 s. */
    public static final Duration WAL_FLUSH_FREQUENCY_DEFAULT = Duration.ofSeconds(1);
    /** Shortest WAL flush frequency: 1 ms. */
    public static final Duration WAL_FLUSH_FREQUENCY_MIN = Duration.ofMillis(1);
    /** Longest WAL flush frequency: 1 h. */
    public static final Duration WAL_FLUSH_FREQUENCY_MAX = Duration.ofHours(1);

    /** Interval between checkpoints. */
    public static final String CHECKPOINT_FREQUENCY_PROP_NAME = PREFIX + "checkpointFrequency";
    /** Default checkpoint frequency: 30 s. */
    public static final Duration CHECKPOINT_FREQUENCY_DEFAULT = Duration.ofSeconds(30);
    /** Shortest checkpoint frequency: 1 ms. */
    public static final Duration CHECKPOINT_FREQUENCY_MIN = Duration.ofMillis(1);
    /** Longest checkpoint frequency: 1 d. */
    public static final Duration CHECKPOINT_FREQUENCY_MAX = Duration.ofDays(1);

    /** Threads writing pages during a checkpoint. */
    public static final String CHECKPOINT_THREADS_PROP_NAME = PREFIX + "checkpointThreads";
    /** Default checkpoint threads. */
    public static final int CHECKPOINT_THREADS_DEFAULT = 2;
    /** Fewest checkpoint threads. */
    public static final int CHECKPOINT_THREADS_MIN = 1;
    /** Most checkpoint threads. */
    public static final int CHECKPOINT_THREADS_MAX = 64;

    /** Copy-on-write buffer in bytes for pages changed while a checkpoint runs; a multiple of the page size. */
    public static final String CHECKPOINT_BUFFER_SIZE_PROP_NAME = PREFIX + "checkpointBufferSize";
    /** Default checkpoint buffer size: 64 MiB. */
    public static final long CHECKPOINT_BUFFER_SIZE_DEFAULT = 64 * MiB;
    /** Smallest checkpoint buffer size: 256 KiB. */
    public static final long CHECKPOINT_BUFFER_SIZE_MIN = 256 * KiB;
    /** Largest checkpoint buffer size: 64 GiB. */
    public static final long CHECKPOINT_BUFFER_SIZE_MAX = 64 * GiB;

    /** Dirty share of the data region that triggers a checkpoint. */
    public static final String CHECKPOINT_DIRTY_RATIO_PROP_NAME = PREFIX + "checkpointDirtyRatio";
    /** Default checkpoint dirty ratio. */
    public static final double CHECKPOINT_DIRTY_RATIO_DEFAULT = 0.75;
    /** Smallest checkpoint dirty ratio. */
    public static final double CHECKPOINT_DIRTY_RATIO_MIN = 0.05;
    /** Largest checkpoint dirty ratio. */
    public static final double CHECKPOINT_DIRTY_RATIO_MAX = 0.95;

    /** WAL bytes written since the last checkpoint that trigger a checkpoint. */
    public static final String CHECKPOINT_WAL_VOLUME_PROP_NAME = PREFIX + "checkpointWalVolume";
    /** Default checkpoint WAL volume: 1 GiB. */
    public static final long CHECKPOINT_WAL_VOLUME_DEFAULT = GiB;
    /** Smallest checkpoint WAL volume: 1 MiB. */
    public static final long CHECKPOINT_WAL_VOLUME_MIN = MiB;
    /** Largest checkpoint WAL volume: 1 TiB. */
    public static final long CHECKPOINT_WAL_VOLUME_MAX = TiB;

    /** Skippy levels above the Maplog (0 = plain Maplog scans); more levels skip more repeated mappings of hot pages. */
    public static final String SKIPPY_LEVELS_PROP_NAME = PREFIX + "skippyLevels";
    /** Default Skippy levels. */
    public static final int SKIPPY_LEVELS_DEFAULT = 2;
    /** Fewest Skippy levels. */
    public static final int SKIPPY_LEVELS_MIN = 0;
    /** Most Skippy levels. */
    public static final int SKIPPY_LEVELS_MAX = 8;

    /**
     * Mappings per Skippy node: a node's first-encountered mappings are promoted to the next level. A level pays off
     * when a node holds repeats, i.e. when the hot pages are fewer than a node's mappings: hence the large default.
     */
    public static final String SKIPPY_NODE_ENTRIES_PROP_NAME = PREFIX + "skippyNodeEntries";
    /** Default Skippy node size. */
    public static final int SKIPPY_NODE_ENTRIES_DEFAULT = 4096;
    /** Smallest Skippy node. */
    public static final int SKIPPY_NODE_ENTRIES_MIN = 8;
    /** Largest Skippy node. */
    public static final int SKIPPY_NODE_ENTRIES_MAX = 65536;

    /** Off-heap buffer for captured page pre-states on their way to the archive; writers wait when it is full. */
    public static final String CAPTURE_BUFFER_SIZE_PROP_NAME = PREFIX + "captureBufferSize";
    /** Default capture buffer: 16 MiB. */
    public static final long CAPTURE_BUFFER_SIZE_DEFAULT = 16 * MiB;
    /** Smallest capture buffer: 256 KiB. */
    public static final long CAPTURE_BUFFER_SIZE_MIN = 256 * KiB;
    /** Largest capture buffer: 64 GiB. */
    public static final long CAPTURE_BUFFER_SIZE_MAX = 64 * GiB;

    /** Pagelog segment size: the unit in which the archive reclaims space (a whole segment, never a copy). */
    public static final String ARCHIVE_SEGMENT_SIZE_PROP_NAME = PREFIX + "archiveSegmentSize";
    /** Default archive segment: 64 MiB. */
    public static final long ARCHIVE_SEGMENT_SIZE_DEFAULT = 64 * MiB;
    /** Smallest archive segment: 256 KiB. */
    public static final long ARCHIVE_SEGMENT_SIZE_MIN = 256 * KiB;
    /** Largest archive segment: 4 GiB. */
    public static final long ARCHIVE_SEGMENT_SIZE_MAX = 4 * GiB;

    /**
     * Hybrid page window W of the snapshot archive: the W most recent snapshots are always read page-based. A snapshot
     * whose rank was raised after its declaration (lazy ranking, {@code rank(id, level)}) keeps being read page-based
     * from its declared level while it is among the W most recent; once W newer snapshots exist, the next checkpoint
     * copies it into its new level's ranked extents as byte-range diffs against that level's pages (diff-based from
     * then on). A rank change inside the window costs only a log record; one after the window is copied at the next
     * checkpoint (a copy-out, reading the snapshot's diffs). 0 = copy at the next checkpoint.
     */
    public static final String SNAPSHOT_PAGE_WINDOW_PROP_NAME = PREFIX + "snapshotPageWindow";
    /** Default snapshot page window. */
    public static final int SNAPSHOT_PAGE_WINDOW_DEFAULT = 64;
    /** Smallest snapshot page window: copy at the next checkpoint. */
    public static final int SNAPSHOT_PAGE_WINDOW_MIN = 0;
    /** Largest snapshot page window. */
    public static final int SNAPSHOT_PAGE_WINDOW_MAX = 1_048_576;

    /** Snapshot retention rules per rank level, e.g. {@code keepLast(60),keepFor(PT24H),keepAll()}. */
    public static final String RETENTION_PROP_NAME = PREFIX + "retention";
    /** Snapshot archive budget in bytes, see {@link RankTreePolicy#withBudget(long)}; none by default. */
    public static final String RETENTION_BUDGET_PROP_NAME = PREFIX + "retentionBudget";
    /** Default retention: keep every snapshot, no budget. */
    public static final RankTreePolicy RETENTION_DEFAULT = RankTreePolicy.keepEverything();

    /** Snapshot archive directory; must differ from the store directory. */
    public static final String ARCHIVE_PATH_PROP_NAME = PREFIX + "archivePath";
    /** The directories the store keeps under {@code path}; an {@code archivePath} may not lie in one of them. */
    public static final List<String> STORE_DIRECTORIES = List.of("pages", "wal", "checkpoints");
    /** Name of the default archive directory inside the store directory. */
    public static final String ARCHIVE_PATH_DEFAULT_NAME = "archive";

    /**
     * The store's name in JMX ({@code dev.varve:type=Store,name=<name>}), thread names and log lines, so stores in
     * one JVM can be told apart; by default the absolute store path.
     */
    public static final String NAME_PROP_NAME = PREFIX + "name";
    /** Longest store name, characters. */
    public static final int NAME_MAX_LENGTH = 200;

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
    private final long checkpointBufferSize;
    private final double checkpointDirtyRatio;
    private final long checkpointWalVolume;
    private final int skippyLevels;
    private final int skippyNodeEntries;
    private final long captureBufferSize;
    private final long archiveSegmentSize;
    private final int snapshotPageWindow;
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
        checkpointBufferSize = b.checkpointBufferSize;
        checkpointDirtyRatio = b.checkpointDirtyRatio;
        checkpointWalVolume = b.checkpointWalVolume;
        skippyLevels = b.skippyLevels;
        skippyNodeEntries = b.skippyNodeEntries;
        captureBufferSize = b.captureBufferSize;
        archiveSegmentSize = b.archiveSegmentSize;
        snapshotPageWindow = b.snapshotPageWindow;
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
     * {@value #PREFIX} prefix are ignored; unknown keys with it are rejected.
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
                .checkpointFrequency(checkpointFrequency).checkpointThreads(checkpointThreads)
                .checkpointBufferSize(checkpointBufferSize).checkpointDirtyRatio(checkpointDirtyRatio)
                .checkpointWalVolume(checkpointWalVolume).skippyLevels(skippyLevels).skippyNodeEntries(skippyNodeEntries)
                .captureBufferSize(captureBufferSize).archiveSegmentSize(archiveSegmentSize)
                .snapshotPageWindow(snapshotPageWindow).retention(retention).archivePath(archivePathGiven).name(nameGiven);
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
                + ", checkpointFrequency=" + checkpointFrequency + ", checkpointThreads=" + checkpointThreads
                + ", checkpointBufferSize=" + checkpointBufferSize + ", checkpointDirtyRatio=" + checkpointDirtyRatio
                + ", checkpointWalVolume=" + checkpointWalVolume + ", skippyLevels=" + skippyLevels
                + ", skippyNodeEntries=" + skippyNodeEntries + ", captureBufferSize=" + captureBufferSize
                + ", archiveSegmentSize=" + archiveSegmentSize + ", snapshotPageWindow=" + snapshotPageWindow
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
        private long checkpointBufferSize = CHECKPOINT_BUFFER_SIZE_DEFAULT;
        private double checkpointDirtyRatio = CHECKPOINT_DIRTY_RATIO_DEFAULT;
        private long checkpointWalVolume = CHECKPOINT_WAL_VOLUME_DEFAULT;
        private int skippyLevels = SKIPPY_LEVELS_DEFAULT;
        private int skippyNodeEntries = SKIPPY_NODE_ENTRIES_DEFAULT;
        private long captureBufferSize = CAPTURE_BUFFER_SIZE_DEFAULT;
        private long archiveSegmentSize = ARCHIVE_SEGMENT_SIZE_DEFAULT;
        private int snapshotPageWindow = SNAPSHOT_PAGE_WINDOW_DEFAULT;
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
         * Sets the page size in bytes, see {@link #PAGE_SIZE_PROP_NAME}.
         * @param v the new value
         * @return this builder
         */
        public Builder pageSize(int v) {
            pageSize = v;
            return this;
        }

        /**
         * Sets the data region size in bytes, see {@link #DATA_REGION_SIZE_PROP_NAME}.
         * @param v the new value
         * @return this builder
         */
        public Builder dataRegionSize(long v) {
            dataRegionSize = v;
            return this;
        }

        /**
         * Sets the partitions per table, see {@link #PARTITIONS_PROP_NAME}.
         * @param v the new value
         * @return this builder
         */
        public Builder partitions(int v) {
            partitions = v;
            return this;
        }

        /**
         * Sets the recovery mode, see {@link #RECOVERY_MODE_PROP_NAME}.
         * @param v the new value
         * @return this builder
         */
        public Builder recoveryMode(RecoveryMode v) {
            recoveryMode = v;
            return this;
        }

        /**
         * Sets the recovery compression, see {@link #RECOVERY_COMPRESSION_PROP_NAME}.
         * @param v the new value
         * @return this builder
         */
        public Builder recoveryCompression(RecoveryCompression v) {
            recoveryCompression = v;
            return this;
        }

        /**
         * Sets the WAL sync mode, see {@link #WAL_SYNC_MODE_PROP_NAME}.
         * @param v the new value
         * @return this builder
         */
        public Builder walSyncMode(WalSyncMode v) {
            walSyncMode = v;
            return this;
        }

        /**
         * Sets the WAL segment size in bytes, see {@link #WAL_SEGMENT_SIZE_PROP_NAME}.
         * @param v the new value
         * @return this builder
         */
        public Builder walSegmentSize(long v) {
            walSegmentSize = v;
            return this;
        }

        /**
         * Sets the WAL flush frequency, see {@link #WAL_FLUSH_FREQUENCY_PROP_NAME}.
         * @param v the new value
         * @return this builder
         */
        public Builder walFlushFrequency(Duration v) {
            walFlushFrequency = v;
            return this;
        }

        /**
         * Sets the checkpoint frequency, see {@link #CHECKPOINT_FREQUENCY_PROP_NAME}.
         * @param v the new value
         * @return this builder
         */
        public Builder checkpointFrequency(Duration v) {
            checkpointFrequency = v;
            return this;
        }

        /**
         * Sets the checkpoint threads, see {@link #CHECKPOINT_THREADS_PROP_NAME}.
         * @param v the new value
         * @return this builder
         */
        public Builder checkpointThreads(int v) {
            checkpointThreads = v;
            return this;
        }

        /**
         * Sets the checkpoint buffer size in bytes, see {@link #CHECKPOINT_BUFFER_SIZE_PROP_NAME}.
         * @param v the new value
         * @return this builder
         */
        public Builder checkpointBufferSize(long v) {
            checkpointBufferSize = v;
            return this;
        }

        /**
         * Sets the checkpoint dirty ratio, see {@link #CHECKPOINT_DIRTY_RATIO_PROP_NAME}.
         * @param v the new value
         * @return this builder
         */
        public Builder checkpointDirtyRatio(double v) {
            checkpointDirtyRatio = v;
            return this;
        }

        /**
         * Sets the checkpoint WAL volume in bytes, see {@link #CHECKPOINT_WAL_VOLUME_PROP_NAME}.
         * @param v the new value
         * @return this builder
         */
        public Builder checkpointWalVolume(long v) {
            checkpointWalVolume = v;
            return this;
        }

        /**
         * Sets the Skippy levels, see {@link #SKIPPY_LEVELS_PROP_NAME}.
         * @param v the new value
         * @return this builder
         */
        public Builder skippyLevels(int v) {
            skippyLevels = v;
            return this;
        }

        /**
         * Sets the Skippy node size in mappings, see {@link #SKIPPY_NODE_ENTRIES_PROP_NAME}.
         * @param v the new value
         * @return this builder
         */
        public Builder skippyNodeEntries(int v) {
            skippyNodeEntries = v;
            return this;
        }

        /**
         * Sets the capture buffer size in bytes, see {@link #CAPTURE_BUFFER_SIZE_PROP_NAME}.
         * @param v the new value
         * @return this builder
         */
        public Builder captureBufferSize(long v) {
            captureBufferSize = v;
            return this;
        }

        /**
         * Sets the archive segment size in bytes, see {@link #ARCHIVE_SEGMENT_SIZE_PROP_NAME}.
         * @param v the new value
         * @return this builder
         */
        public Builder archiveSegmentSize(long v) {
            archiveSegmentSize = v;
            return this;
        }

        /**
         * Sets the hybrid page window W in snapshots, see {@link #SNAPSHOT_PAGE_WINDOW_PROP_NAME}.
         * @param v the new value
         * @return this builder
         */
        public Builder snapshotPageWindow(int v) {
            snapshotPageWindow = v;
            return this;
        }

        /**
         * Sets the snapshot retention policy, see {@link #RETENTION_PROP_NAME}.
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
         * Sets the store's name, see {@link #NAME_PROP_NAME}.
         * @param v 1 to {@link #NAME_MAX_LENGTH} characters without control characters, or null for the store path
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
            ConfigChecks.required("path", path);
            ConfigChecks.powerOfTwo("pageSize", pageSize, PAGE_SIZE_MIN, PAGE_SIZE_MAX);
            ConfigChecks.byteRange("dataRegionSize", dataRegionSize, DATA_REGION_SIZE_MIN, DATA_REGION_SIZE_MAX);
            ConfigChecks.intRange("partitions", partitions, PARTITIONS_MIN, PARTITIONS_MAX);
            ConfigChecks.required("recoveryMode", recoveryMode);
            ConfigChecks.required("recoveryCompression", recoveryCompression);
            ConfigChecks.required("walSyncMode", walSyncMode);
            ConfigChecks.byteRange("walSegmentSize", walSegmentSize, WAL_SEGMENT_SIZE_MIN, WAL_SEGMENT_SIZE_MAX);
            ConfigChecks.multipleOf("walSegmentSize", walSegmentSize, "4096", WAL_SEGMENT_ALIGNMENT);
            ConfigChecks.durationRange("walFlushFrequency", walFlushFrequency,
                    WAL_FLUSH_FREQUENCY_MIN, WAL_FLUSH_FREQUENCY_MAX);
            ConfigChecks.durationRange("checkpointFrequency", checkpointFrequency,
                    CHECKPOINT_FREQUENCY_MIN, CHECKPOINT_FREQUENCY_MAX);
            ConfigChecks.intRange("checkpointThreads", checkpointThreads, CHECKPOINT_THREADS_MIN, CHECKPOINT_THREADS_MAX);
            ConfigChecks.byteRange("checkpointBufferSize", checkpointBufferSize,
                    CHECKPOINT_BUFFER_SIZE_MIN, CHECKPOINT_BUFFER_SIZE_MAX);
            ConfigChecks.doubleRange("checkpointDirtyRatio", checkpointDirtyRatio,
                    CHECKPOINT_DIRTY_RATIO_MIN, CHECKPOINT_DIRTY_RATIO_MAX);
            ConfigChecks.byteRange("checkpointWalVolume", checkpointWalVolume,
                    CHECKPOINT_WAL_VOLUME_MIN, CHECKPOINT_WAL_VOLUME_MAX);
            ConfigChecks.intRange("skippyLevels", skippyLevels, SKIPPY_LEVELS_MIN, SKIPPY_LEVELS_MAX);
            ConfigChecks.intRange("skippyNodeEntries", skippyNodeEntries, SKIPPY_NODE_ENTRIES_MIN, SKIPPY_NODE_ENTRIES_MAX);
            ConfigChecks.byteRange("captureBufferSize", captureBufferSize, CAPTURE_BUFFER_SIZE_MIN, CAPTURE_BUFFER_SIZE_MAX);
            ConfigChecks.byteRange("archiveSegmentSize", archiveSegmentSize, ARCHIVE_SEGMENT_SIZE_MIN, ARCHIVE_SEGMENT_SIZE_MAX);
            ConfigChecks.intRange("snapshotPageWindow", snapshotPageWindow, SNAPSHOT_PAGE_WINDOW_MIN, SNAPSHOT_PAGE_WINDOW_MAX);
            ConfigChecks.required("retention", retention);
            if (name != null && (name.isEmpty() || name.length() > NAME_MAX_LENGTH || name.chars().anyMatch(Character::isISOControl))) {
                throw new IllegalArgumentException("name must be 1.." + NAME_MAX_LENGTH + " characters without control characters, was '"
                        + name + "'");
            }

            // Fields against each other.
            ConfigChecks.multipleOf("dataRegionSize", dataRegionSize, "pageSize", pageSize);
            if (dataRegionSize / pageSize < DATA_REGION_MIN_PAGES) {
                throw new IllegalArgumentException("dataRegionSize must hold at least " + DATA_REGION_MIN_PAGES
                        + " pages of pageSize " + pageSize + " (" + ConfigChecks.bytes((long) DATA_REGION_MIN_PAGES * pageSize)
                        + "), was " + dataRegionSize + " bytes");
            }
            ConfigChecks.multipleOf("checkpointBufferSize", checkpointBufferSize, "pageSize", pageSize);
            ConfigChecks.multipleOf("captureBufferSize", captureBufferSize, "pageSize", pageSize);
            if (archivePath != null) ConfigChecks.archiveApart(path, archivePath, STORE_DIRECTORIES);
            return new VarveConfig(this);
        }
    }
}
