package dev.varve.config;

import static dev.varve.config.ConfigChecks.GiB;
import static dev.varve.config.ConfigChecks.KiB;
import static dev.varve.config.ConfigChecks.MiB;
import static dev.varve.config.ConfigChecks.TiB;

import java.time.Duration;
import java.util.List;

/**
 * The catalogue of {@link VarveConfig}'s settings: for each one its property name ({@code *_PROP_NAME}, prefix
 * {@value #PREFIX}) used by {@link VarveConfig#load}, its default ({@code *_DEFAULT}) and its allowed range
 * ({@code *_MIN}, {@code *_MAX}), side by side. Sizes are in bytes.
 */
public final class ConfigLimits {
    private ConfigLimits() {
    }

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

    /**
     * Off-heap page memory in bytes; a multiple of the page size holding at least {@value #DATA_REGION_MIN_PAGES} pages, and
     * twice {@link #tableCreationPages} of the partitions.
     */
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

    /**
     * Pages the creation of a table of {@code partitions} partitions is counted to touch (a meta and a root page per
     * partition, and the catalog's path). One change may take at most half the data region, so a region must hold
     * twice this for a table of {@link #PARTITIONS_PROP_NAME} partitions.
     *
     * @param partitions the table's partitions
     * @return the pages its creation reserves
     */
    public static int tableCreationPages(int partitions) {
        return 2 * partitions + 16;
    }

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

    /**
     * Threads replaying the WAL's data records by partition at recovery, at most one per core (1: the opening
     * thread replays alone).
     */
    public static final String RECOVERY_THREADS_PROP_NAME = PREFIX + "recoveryThreads";
    /** Default recovery threads. */
    public static final int RECOVERY_THREADS_DEFAULT = 4;
    /** Fewest recovery threads. */
    public static final int RECOVERY_THREADS_MIN = 1;
    /** Most recovery threads. */
    public static final int RECOVERY_THREADS_MAX = 64;

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

    /**
     * Diff capture: the longest chain of byte-range diffs from an archived pre-state back to a whole page. A page's
     * pre-state is archived as the bytes that changed since its previous capture (a diff against that version) while
     * the chain behind it is shorter than this; then as a whole page again. The first read of a version costs one
     * archive read per link (at most this many plus one, most served from the records the archive read last), later
     * ones a copy while the archive keeps the rebuilt page; a longer chain stores less. 0 = every pre-state a whole page.
     */
    public static final String SNAPSHOT_DIFF_CHAIN_PROP_NAME = PREFIX + "snapshotDiffChain";
    /**
     * Default diff chain: a whole page at least every 64 captures of it. With diffs of about a hundred bytes, whole pages
     * are most of what the archive writes: after every 10-put batch over 100,000 keys, 3.2 bytes of archive per byte
     * changed at 63, 3.9 at 31, 5 at 15; a first read of old history walks up to 63 links (most from the records the
     * Pagelog read last), a p99 of 150 µs on the first pass against 40 µs at 15.
     */
    public static final int SNAPSHOT_DIFF_CHAIN_DEFAULT = 63;
    /** Smallest diff chain: diff capture off. */
    public static final int SNAPSHOT_DIFF_CHAIN_MIN = 0;
    /** Longest diff chain. */
    public static final int SNAPSHOT_DIFF_CHAIN_MAX = 255;

    /** Snapshot retention rules per rank level, e.g. {@code keepLast(60),keepFor(PT24H),keepAll()}. */
    public static final String RETENTION_PROP_NAME = PREFIX + "retention";
    /** Snapshot archive budget in bytes, see {@link RankTreePolicy#withBudget(long)}; none by default. */
    public static final String RETENTION_BUDGET_PROP_NAME = PREFIX + "retentionBudget";
    /** Default retention: keep every snapshot, no budget. */
    public static final RankTreePolicy RETENTION_DEFAULT = RankTreePolicy.keepEverything();

    /** Snapshot archive directory; must differ from the store directory. */
    public static final String ARCHIVE_PATH_PROP_NAME = PREFIX + "archivePath";
    /**
     * The directories the store keeps under {@code path}; an {@code archivePath} may not lie in one of them. The last is
     * the mark of an unfinished transfer ({@code Varve.INCOMING_DIR}): an archive there would make every later open
     * refuse the store as one.
     */
    public static final List<String> STORE_DIRECTORIES = List.of("pages", "wal", "checkpoints", ".incoming");
    /** Name of the default archive directory inside the store directory. */
    public static final String ARCHIVE_PATH_DEFAULT_NAME = "archive";

    /**
     * The store's name in JMX ({@code dev.varve:type=Store,name="<name>"}), thread names and log lines, so stores in
     * one JVM can be told apart; by default the absolute store path.
     */
    public static final String NAME_PROP_NAME = PREFIX + "name";
    /** Longest store name, characters. */
    public static final int NAME_MAX_LENGTH = 200;
}
