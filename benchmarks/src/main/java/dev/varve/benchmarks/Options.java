package dev.varve.benchmarks;

import dev.varve.config.RecoveryCompression;
import dev.varve.config.RecoveryMode;
import dev.varve.config.ConfigLimits;
import dev.varve.config.VarveConfig;
import dev.varve.config.WalSyncMode;

import java.nio.file.Path;
import java.util.List;
import java.util.Locale;

/** The command-line flags of {@link Main}, parsed and checked; {@link UsageException} names a bad one. */
final class Options {
    /** What to run. */
    enum Job { DEMO, COMPARE, RECOVERY_MODES, RECOVERY_TIME, RETENTION, SNAPSHOT_COST, CHAIN_COST, SHIP, INFINISPAN, HELP }

    /** What {@code java -jar varve-benchmarks.jar} runs without a job flag. */
    static final Job DEFAULT_JOB = Job.COMPARE;

    /** A flag the parser does not accept; the message says which and why. */
    static final class UsageException extends Exception {
        private static final long serialVersionUID = 1L;

        UsageException(String message) {
            super(message);
        }
    }

    static final Path DIR_DEFAULT = Path.of("varve-data");
    static final long KEYS_DEFAULT = 200_000;
    static final int SECONDS_DEFAULT = 20;
    static final int DIRTY_MIB_DEFAULT = 1024;
    static final int SHIP_MIB_DEFAULT = 1024;
    static final Path OUT_DEFAULT = Path.of("benchmark-report");
    static final int COMPARE_SECONDS_DEFAULT = 4;
    static final int COMPARE_SECONDS_LONG = 20;
    static final int RETENTION_SECONDS_DEFAULT = 10;
    static final int SNAPSHOT_COST_SECONDS_DEFAULT = 5;
    static final long COMPARE_KEYS_DEFAULT = 1_000_000;
    static final int RATE_DEFAULT = 10_000;
    static final int BATCH_DEFAULT = 100;
    static final long CHECKPOINT_MILLIS_DEFAULT = 1000;
    static final int COMPARE_WARMUP_SECONDS_DEFAULT = 2;
    static final int COMPARE_WARMUP_SECONDS_LONG = 5;

    static final String USAGE = String.join("\n",
            "usage: java -jar varve-benchmarks.jar [JOB] [FLAGS]",
            "",
            "jobs (default: " + (DEFAULT_JOB == Job.COMPARE ? "--compare" : "--demo") + "):",
            "  --compare               the comparison harness: Varve (WAL_PHYSICAL, recovery files DISABLED / SKIP_GARBAGE /",
            "                          SNAPPY) vs Apache Ignite 2.18 native persistence (physical WAL records, and",
            "                          writeRecoveryDataOnCheckpoint) vs H2 MVStore vs RocksDB, each in its own child JVM, same load and",
            "                          durability; full-speed, fixed-rate and unique-key (disk-heavy) puts and batches; writes",
            "                          BENCHMARKS.md and SVG charts to --out and prints the table (about 7 minutes on 2 cores)",
            "  --demo                  writes --keys keys, closes, reopens, reads back, verifies and scans a store",
            "  --recovery-modes        the same put load in WAL_PHYSICAL and in CHECKPOINT_RECOVERY_FILE with",
            "                          DISABLED, SKIP_GARBAGE and SNAPPY, one after another; prints one table",
            "  --recovery-time         kill -9 a child JVM with --dirty-mib of dirty pages, time the recovery",
            "                          (Varve.open) in both recovery modes",
            "  --retention             Thresher's ranked-retention claims in one run: checkpoint cost vs retention fraction,",
            "                          archive plateau, lazy vs eager ranking, diff compactness, as-of reads page- vs",
            "                          diff-based; writes RETENTION.md and a chart to --out and prints the tables",
            "  --snapshot-cost         what snapshots cost a writer: cadence (none, after every batch, every 1 ms / 10 ms / 100 ms /",
            "                          1 s) x LOG_ONLY, FSYNC x diff, whole-page capture; batches/s against no snapshots, archive",
            "                          bytes per changed byte, WAL bytes per put, as-of get latency (recent and old snapshot);",
            "                          writes SNAPSHOT-COST.md to --out and prints the table (about 7 minutes at the default",
            "                          " + SNAPSHOT_COST_SECONDS_DEFAULT + " s per row)",
            "  --chain-cost            what each snapshotDiffChain bound (whole pages, 7, 15, 31, the default) buys and costs:",
            "                          archive bytes per changed byte against the first as-of pass over old history, on the",
            "                          same history for every bound; writes CHAIN-COST.md to --out (about 2 minutes)",
            "  --ship                  snapshot shipping on loopback: a --ship-mib image pulled from a live store while a",
            "                          writer keeps writing; throughput against the disk's durable write bandwidth and the",
            "                          writer's put rate during the transfer against without it; the process's CPU and",
            "                          the source store's own disk writes, with and without the transfer",
            "  --infinispan            SoftIndexFileStore vs RocksDBStore vs VarveStore under the same Infinispan cache on one",
            "                          node, then on three nodes (child JVMs, JGroups TCP on loopback, 2 owners): put",
            "                          throughput and p99, bytes on disk, restart time, cold gets (--keys entries, default",
            "                          " + KEYS_DEFAULT + "); writes INFINISPAN.md to --out",
            "  --jmh [JMH ARGS...]     run JMH with the remaining arguments, e.g. --jmh PutGetBenchmark -f 1",
            "                          (--jmh -h lists JMH's flags, --jmh -l the benchmarks)",
            "  --help                  this text",
            "",
            "flags:",
            "  --dir PATH              store directory, wiped first (default ./varve-data); only an empty",
            "                          directory or one this tool or Varve wrote is wiped",
            "  --keys N                demo: keys to write (default " + KEYS_DEFAULT + ", 100-byte values); compare: key range",
            "                          of the random phases (default " + COMPARE_KEYS_DEFAULT + ")",
            "  --mode MODE             WAL_PHYSICAL | CHECKPOINT_RECOVERY_FILE (default " + ConfigLimits.RECOVERY_MODE_DEFAULT + ")",
            "  --compression C         DISABLED | SKIP_GARBAGE | SNAPPY (default " + ConfigLimits.RECOVERY_COMPRESSION_DEFAULT + ")",
            "  --sync S                FSYNC | LOG_ONLY | BACKGROUND (default " + ConfigLimits.WAL_SYNC_MODE_DEFAULT + "); compare: only",
            "                          this mode (default LOG_ONLY, --long: LOG_ONLY and FSYNC)",
            "  --seconds N             --recovery-modes: seconds per configuration (default " + SECONDS_DEFAULT + "); compare: seconds",
            "                          per phase (default " + COMPARE_SECONDS_DEFAULT + ", --long " + COMPARE_SECONDS_LONG + "); retention: seconds",
            "                          per configuration (default " + RETENTION_SECONDS_DEFAULT + "); snapshot-cost: measured",
            "                          seconds per row (default " + SNAPSHOT_COST_SECONDS_DEFAULT + ")",
            "  --ship-mib N            --ship: MiB of key and value bytes in the shipped image (default " + SHIP_MIB_DEFAULT + ")",
            "  --ship-idle             --ship: no writer during the transfer (the transfer alone)",
            "  --dirty-mib N           --recovery-time: MiB of dirty pages at the kill (default " + DIRTY_MIB_DEFAULT + ")",
            "  --long                  compare: the long version: every phase (puts and batches of each load, writers), LOG_ONLY",
            "                          and FSYNC, " + COMPARE_SECONDS_LONG + " s per phase (about an hour on 2 cores)",
            "  --out PATH              compare: report directory (default ./" + OUT_DEFAULT + "): BENCHMARKS.md, charts, data, logs;",
            "                          retention: the same directory, for RETENTION.md and its chart; snapshot-cost: for",
            "                          SNAPSHOT-COST.md; chain-cost: for CHAIN-COST.md",
            "  --threads N             compare: writer threads; infinispan: writer threads of the one node and of each of",
            "                          the three nodes (default 1)",
            "  --rate N                compare: puts/s of the fixed-rate phases (default " + RATE_DEFAULT + ")",
            "  --batch N               compare: puts per batch (default " + BATCH_DEFAULT + ")",
            "  --checkpoint-ms N       compare: checkpoint period of Varve and Ignite (default " + CHECKPOINT_MILLIS_DEFAULT + ")",
            "  --warmup-seconds N      compare: unreported warm-up of each write phase per child JVM, in rounds until the JIT",
            "                          settles (default " + COMPARE_WARMUP_SECONDS_DEFAULT + ", --long " + COMPARE_WARMUP_SECONDS_LONG
                    + "); 0: none, for a run that checks the harness, not the figures",
            "  --phases LIST           compare: the phases to run, comma-separated (default: full_speed, full_speed_batch,",
            "                          fixed_rate, unique); also fixed_rate_batch, unique_batch, writers_1/2/4/8 (full-speed",
            "                          puts from that many writers, each Varve writer on its own partition), fsync_writers_8",
            "                          (8 writers, every put waits for fsync), gets_1/2 (random gets from 1 or 2 threads over",
            "                          --keys preloaded keys of 100-byte values); 'writers' = writers_1..8, 'gets' = gets_1,2,",
            "                          'all' = every phase",
            "  --systems LIST          compare: the systems to run, comma-separated (default all): varve, ignite, h2_mvstore,",
            "                          rocksdb, or one setup such as varve_wal_physical, varve_rf_snappy, ignite_recovery_data",
            "  --verbose               log at INFO (checkpoints, recovery)",
            "");

    Job job;
    Path dir = DIR_DEFAULT;
    long keys = KEYS_DEFAULT;
    RecoveryMode mode = ConfigLimits.RECOVERY_MODE_DEFAULT;
    RecoveryCompression compression = ConfigLimits.RECOVERY_COMPRESSION_DEFAULT;
    WalSyncMode sync = ConfigLimits.WAL_SYNC_MODE_DEFAULT;
    int seconds = SECONDS_DEFAULT;
    int dirtyMiB = DIRTY_MIB_DEFAULT;
    int shipMiB = SHIP_MIB_DEFAULT;
    boolean shipIdle;
    boolean verbose;
    boolean longRun;
    Path out = OUT_DEFAULT;
    int threads = 1;
    int rate = RATE_DEFAULT;
    int batchSize = BATCH_DEFAULT;
    long checkpointMillis = CHECKPOINT_MILLIS_DEFAULT;
    /** {@code --warmup-seconds}; -1: the default (or {@code --long}) warm-up. */
    int warmupSeconds = -1;
    /** {@code --phases}: the compare phases to run; null: the default (or {@code --long}) set. */
    List<ComparePhase> phases;
    /** {@code --systems}: the compare setups to run; null: all. */
    List<CompareSetup> systems;
    boolean syncSet;
    boolean secondsSet;
    boolean keysSet;

    static Options parse(List<String> args) throws UsageException {
        Options o = new Options();
        for (int i = 0; i < args.size(); i++) {
            String flag = args.get(i);
            switch (flag) {
                case "--help", "-h" -> o.job(Job.HELP);
                case "--compare" -> o.job(Job.COMPARE);
                case "--demo" -> o.job(Job.DEMO);
                case "--long" -> o.longRun = true;
                case "--out" -> o.out = Path.of(value(args, ++i, flag));
                case "--threads" -> o.threads = (int) number(args, ++i, flag, 1, 256);
                case "--rate" -> o.rate = (int) number(args, ++i, flag, 1, 100_000_000);
                case "--batch" -> o.batchSize = (int) number(args, ++i, flag, 1, 100_000);
                case "--checkpoint-ms" -> o.checkpointMillis = number(args, ++i, flag, 1, 86_400_000);
                case "--warmup-seconds" -> o.warmupSeconds = (int) number(args, ++i, flag, 0, 3600);
                case "--phases" -> o.phases = listOf(ComparePhase::parse, args, ++i, flag);
                case "--systems" -> o.systems = listOf(CompareSetup::parse, args, ++i, flag);
                case "--recovery-modes" -> o.job(Job.RECOVERY_MODES);
                case "--recovery-time" -> o.job(Job.RECOVERY_TIME);
                case "--retention" -> o.job(Job.RETENTION);
                case "--snapshot-cost" -> o.job(Job.SNAPSHOT_COST);
                case "--chain-cost" -> o.job(Job.CHAIN_COST);
                case "--ship" -> o.job(Job.SHIP);
                case "--ship-mib" -> o.shipMiB = (int) number(args, ++i, flag, 1, 64 * 1024);
                case "--ship-idle" -> o.shipIdle = true;
                case "--infinispan" -> o.job(Job.INFINISPAN);
                case "--verbose" -> o.verbose = true;
                case "--dir" -> o.dir = Path.of(value(args, ++i, flag));
                case "--keys" -> {
                    o.keys = number(args, ++i, flag, 1, Long.MAX_VALUE);
                    o.keysSet = true;
                }
                case "--seconds" -> {
                    o.seconds = (int) number(args, ++i, flag, 1, 3600);
                    o.secondsSet = true;
                }
                case "--dirty-mib" -> o.dirtyMiB = (int) number(args, ++i, flag, 1, 64 * 1024);
                case "--mode" -> o.mode = choice(RecoveryMode.class, args, ++i, flag);
                case "--compression" -> o.compression = choice(RecoveryCompression.class, args, ++i, flag);
                case "--sync" -> {
                    o.sync = choice(WalSyncMode.class, args, ++i, flag);
                    o.syncSet = true;
                }
                case "--jmh" -> throw new UsageException("--jmh must be the first argument");
                default -> throw new UsageException("unknown argument '" + flag + "'");
            }
        }
        if (o.job == null) o.job = DEFAULT_JOB;
        return o;
    }

    /** Measured seconds per phase of {@code --compare}. */
    int compareSeconds() {
        return secondsSet ? seconds : longRun ? COMPARE_SECONDS_LONG : COMPARE_SECONDS_DEFAULT;
    }

    /** Unreported warm-up seconds of each write phase of {@code --compare}. */
    int compareWarmupSeconds() {
        return warmupSeconds >= 0 ? warmupSeconds : longRun ? COMPARE_WARMUP_SECONDS_LONG : COMPARE_WARMUP_SECONDS_DEFAULT;
    }

    /** Measured seconds per configuration of {@code --retention}. */
    int retentionSeconds() {
        return secondsSet ? seconds : RETENTION_SECONDS_DEFAULT;
    }

    /** Measured seconds per row of {@code --snapshot-cost}. */
    int snapshotCostSeconds() {
        return secondsSet ? seconds : SNAPSHOT_COST_SECONDS_DEFAULT;
    }

    /** Key range of the random phases of {@code --compare}. */
    long compareKeys() {
        return keysSet ? keys : COMPARE_KEYS_DEFAULT;
    }

    /** The store configuration these flags describe, for {@code dir}, before job-specific changes. */
    VarveConfig.Builder config(Path storeDir) {
        return VarveConfig.builder().path(storeDir).recoveryMode(mode).recoveryCompression(compression).walSyncMode(sync);
    }

    private void job(Job j) throws UsageException {
        if (job != null && job != j) throw new UsageException("choose one job, not both " + name(job) + " and " + name(j));
        job = j;
    }

    private static String name(Job j) {
        return "--" + j.name().toLowerCase(Locale.ROOT).replace('_', '-');
    }

    private static String value(List<String> args, int i, String flag) throws UsageException {
        if (i >= args.size()) throw new UsageException(flag + " needs a value");
        return args.get(i);
    }

    private static <T> List<T> listOf(java.util.function.Function<String, List<T>> parser, List<String> args, int i, String flag)
            throws UsageException {
        try {
            return parser.apply(value(args, i, flag));
        } catch (IllegalArgumentException e) {
            throw new UsageException(flag + ": " + e.getMessage());
        }
    }

    private static long number(List<String> args, int i, String flag, long min, long max) throws UsageException {
        String v = value(args, i, flag).replace("_", "");
        try {
            long n = Long.parseLong(v);
            if (n < min || n > max) throw new UsageException(flag + " must be " + min + ".." + max + ", was " + n);
            return n;
        } catch (NumberFormatException e) {
            throw new UsageException(flag + " needs a whole number, was '" + v + "'");
        }
    }

    private static <E extends Enum<E>> E choice(Class<E> type, List<String> args, int i, String flag) throws UsageException {
        String v = value(args, i, flag);
        for (E e : type.getEnumConstants()) if (e.name().equalsIgnoreCase(v)) return e;
        throw new UsageException(flag + " must be one of " + java.util.Arrays.toString(type.getEnumConstants()) + ", was '" + v + "'");
    }
}
