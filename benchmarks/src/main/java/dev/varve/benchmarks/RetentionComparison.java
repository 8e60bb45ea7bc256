package dev.varve.benchmarks;

import dev.varve.benchmarks.RankedUpdateLoad.Ranking;
import dev.varve.config.RankTreePolicy;
import dev.varve.config.Retention;
import dev.varve.config.VarveConfig;
import dev.varve.engine.SnapshotInfo;
import dev.varve.engine.SnapshotView;
import dev.varve.engine.Table;
import dev.varve.engine.Varve;
import dev.varve.engine.VarveMetrics;

import java.io.IOException;
import java.io.PrintStream;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.SplittableRandom;

/**
 * {@code --retention}: Thresher's claims about ranked retention, measured side by side in one run. Every
 * configuration runs the {@link RankedUpdateLoad} (random overwrites in atomic batches, a snapshot after each batch)
 * on a fresh store, one after another in this JVM after one untimed warm-up, with a checkpoint every
 * {@value RecoveryModeComparison#CHECKPOINT_MILLIS} ms; on a shared machine only the ratios between configurations
 * that ran seconds apart mean much. Five sections: checkpoint cost against retention fraction (Thresher's Table 1),
 * the archive plateau of a bounded policy, lazy against eager ranking, diff compactness against update density, and
 * as-of read latency before and after a lazily ranked snapshot is copied into its level. Prints the tables and
 * writes them, with a chart of the plateau, to {@value RetentionReport#FILE} in {@code --out}.
 */
final class RetentionComparison {
    static final int KEYS = 100_000;
    static final int BATCH = 10;
    /** Section 1: one snapshot in {@code f} declared rank 2. */
    static final int[] SEGREGATIONS = {200, 400, 800, 1600};
    /** Sections 2 to 4: one snapshot in this many gets rank 2. */
    static final int RANK2_EVERY = 200;
    /** Sections 3 and 4: a lazily ranked snapshot is raised this many batches after its declaration (half the default W). */
    static final int RANK_DELAY = 32;
    /** The plateau runs this many times {@code --seconds}: long enough for reclamation to reach a steady state. */
    static final int PLATEAU_FACTOR = 3;
    static final long SAMPLE_MILLIS = 500;
    /**
     * Section 4: update densities as (key space, puts per batch). Between two rank-2 snapshots ({@value #RANK2_EVERY}
     * batches) low density updates 0.002 of the keys, medium 0.05, high 0.4.
     */
    static final int[][] DENSITIES = {{KEYS, 1}, {40_000, 10}, {10_000, 20}};
    static final String[] DENSITY_NAMES = {"low density", "medium density", "high density"};
    /** Section 5: gets per timed pass, and timed passes (the median is reported). */
    static final int READS = 200_000;
    static final int READ_PASSES = 3;
    /** Section 5: batches between w and v, the changes v's diffs carry (1% of the keys). */
    static final int STEPS_BEFORE_V = KEYS / 100 / BATCH;
    static final long SEED = 42;

    static final RankTreePolicy UNSEGREGATED = RankTreePolicy.levels(Retention.keepAll());
    static final RankTreePolicy SEGREGATED = RankTreePolicy.levels(Retention.keepLast(100), Retention.keepAll());
    static final RankTreePolicy BOUNDED = RankTreePolicy.levels(Retention.keepLast(100), Retention.keepLast(10));

    /** One configuration: its retention policy, key space, batch size and how each batch's snapshot is ranked. */
    record Setup(String label, RankTreePolicy policy, int keys, int batchSize, Ranking ranking, int every, int rankDelay) {
        String dirName() {
            return label.replaceAll("[^A-Za-z0-9]+", "-");
        }
    }

    /** Archive figures at one moment of a run. */
    record Sample(double seconds, long archiveBytes, long[] perLevel, long reclaimed, int liveSnapshots) {
    }

    /**
     * What one configuration did. Throughput, checkpoints and throttling cover the timed run; the archive figures
     * are read after one more (untimed) checkpoint, so the archive has caught up and reclamation has had its turn.
     */
    record Run(Setup setup, long batches, long nanos, long checkpointsCompleted, CheckpointTally.Totals checkpoints, long throttledNanos,
               long endCheckpointNanos, long archiveBytes, long[] perLevel, long reclaimed, long copied, double compactness, long deadBytes, int liveSnapshots,
               List<Sample> samples) {
        double batchesPerSecond() {
            return batches / (nanos / 1e9);
        }

        double putsPerSecond() {
            return batchesPerSecond() * setup.batchSize();
        }

        /** Mean checkpoint time of the timed run, ms; NaN when no checkpoint completed in it. */
        double avgCheckpointMillis() {
            return checkpoints.checkpoints() == 0 ? Double.NaN : checkpoints.avgMillis(checkpoints.totalNanos());
        }

        long rank2Snapshots() {
            return setup.every() == 0 ? 0 : batches / setup.every();
        }
    }

    /** Section 5: median ns per get, on the current table and as of v, before and after v was copied into level 2. */
    record AsOfReads(int window, int rankOfV, long copied, double compactness, double currentBeforeNs, double pageNs,
                     double currentAfterNs, double diffNs, long valuesChecked) {
    }

    private final Options opts;
    private final PrintStream out;
    private final RetentionReport report;

    RetentionComparison(Options opts, PrintStream out) {
        this.opts = opts;
        this.out = out;
        this.report = new RetentionReport(opts, out);
    }

    void run() throws IOException, DemoJob.MismatchException {
        long t0 = System.nanoTime();
        int seconds = opts.retentionSeconds();
        StoreDirs.wipe(opts.dir);
        MachineInfo machine = MachineInfo.probe(opts.dir);
        int window = opts.config(opts.dir).build().snapshotPageWindow();
        String load = String.format("%,d keys of 8 bytes, %d-byte values, preloaded and checkpointed; random overwrites in atomic batches of %d, "
                        + "a snapshot after every batch; %s, checkpoint every %d ms, page window W = %d (default); %d s per configuration, "
                        + "archive plateau %d s", KEYS, RankedUpdateLoad.VALUE_BYTES, BATCH, opts.sync, RecoveryModeComparison.CHECKPOINT_MILLIS,
                window, seconds, PLATEAU_FACTOR * seconds);
        out.println("retention: Thresher's claims, one configuration after another on fresh stores; " + load);
        out.printf("machine: %s%n", machine.oneLine());
        int warmup = Math.max(1, Math.min(5, seconds / 4));
        out.printf("warm-up: %d s (not reported)%n", warmup);
        measure(twoLevels("warm-up", RANK2_EVERY, Ranking.EAGER, 0), warmup, false);

        List<Run> costs = new ArrayList<>();
        costs.add(report(measure(new Setup("none", UNSEGREGATED, KEYS, BATCH, Ranking.NONE, 0, 0), seconds, false)));
        costs.add(report(measure(new Setup("unsegregated", UNSEGREGATED, KEYS, BATCH, Ranking.FLAT, 0, 0), seconds, false)));
        for (int f : SEGREGATIONS) costs.add(report(measure(twoLevels("segregated", f, Ranking.EAGER, 0), seconds, false)));
        report.printCheckpointCost(costs);

        Run plateau = report(measure(new Setup("bounded 1/" + RANK2_EVERY, BOUNDED, KEYS, BATCH, Ranking.EAGER, RANK2_EVERY, 0),
                PLATEAU_FACTOR * seconds, true));
        report.printPlateau(plateau);

        List<Run> ranking = List.of(report(measure(twoLevels("eager", RANK2_EVERY, Ranking.EAGER, 0), seconds, false)),
                report(measure(twoLevels("lazy at once", RANK2_EVERY, Ranking.LAZY, 0), seconds, false)),
                report(measure(twoLevels("lazy after " + RANK_DELAY, RANK2_EVERY, Ranking.LAZY, RANK_DELAY), seconds, false)));
        report.printLazyVsEager(ranking);

        List<Run> density = new ArrayList<>();
        for (int d = 0; d < DENSITIES.length; d++) {
            density.add(report(measure(new Setup(DENSITY_NAMES[d], SEGREGATED, DENSITIES[d][0], DENSITIES[d][1], Ranking.LAZY, RANK2_EVERY, RANK_DELAY),
                    seconds, false)));
        }
        report.printDensity(density);

        report.printAsOf(asOfReads());

        StoreDirs.delete(opts.dir);
        double minutes = (System.nanoTime() - t0) / 60e9;
        Path file = report.write(machine, load, minutes);
        out.printf("%nreport: %s (chart beside it); %.1f minutes%n", file, minutes);
    }

    /** A configuration of the two-level policy {@link #SEGREGATED} over the standard key space. */
    private static Setup twoLevels(String kind, int every, Ranking ranking, int rankDelay) {
        return new Setup(kind + " 1/" + every, SEGREGATED, KEYS, BATCH, ranking, every, rankDelay);
    }

    private VarveConfig config(Path dir, RankTreePolicy policy) {
        return opts.config(dir).retention(policy).checkpointFrequency(Duration.ofMillis(RecoveryModeComparison.CHECKPOINT_MILLIS)).build();
    }

    // ---------------------------------------------------------------- measuring

    private Run measure(Setup s, int seconds, boolean sample) throws IOException {
        Path dir = opts.dir.resolve(s.dirName());
        Run r;
        try (Varve store = Varve.open(config(dir, s.policy()))) {
            RankedUpdateLoad load = RankedUpdateLoad.preload(store, s.keys(), s.batchSize(), s.ranking(), s.every(), s.rankDelay(), SEED);
            store.checkpoint().join(); // the preload's pages are on disk; the timed run starts clean
            VarveMetrics m = store.metrics();
            List<Sample> samples = new ArrayList<>();
            long cp0 = m.checkpointsCompleted();
            long throttled0 = m.throttledNanos();
            long reclaimed0 = m.archiveBytesReclaimed();
            long copied0 = m.archiveBytesCopiedByRanking();
            long start;
            long now;
            CheckpointTally.Totals checkpoints;
            try (CheckpointTally tally = new CheckpointTally(m)) {
                start = System.nanoTime();
                long end = start + seconds * 1_000_000_000L;
                long nextSample = start;
                now = start;
                do {
                    if (sample && now >= nextSample) { // inline, so the sampler never competes with the writer for a core
                        samples.add(sample(store, (now - start) / 1e9, reclaimed0));
                        nextSample += SAMPLE_MILLIS * 1_000_000;
                    }
                    load.step();
                } while ((now = System.nanoTime()) < end);
                if (sample) samples.add(sample(store, (now - start) / 1e9, reclaimed0));
                checkpoints = tally.totals();
            }
            long cps = m.checkpointsCompleted() - cp0;
            long throttled = m.throttledNanos() - throttled0;
            long endCheckpoint = store.checkpoint().join().totalNanos(); // untimed: the archive catches up, reclamation runs
            r = new Run(s, load.batches(), now - start, cps, checkpoints, throttled, endCheckpoint, m.archiveBytes(), m.archiveBytesPerLevel(),
                    m.archiveBytesReclaimed() - reclaimed0, m.archiveBytesCopiedByRanking() - copied0, m.diffCompactness(),
                    m.archiveDeadBytes(), store.snapshots().size(), samples);
        }
        StoreDirs.delete(dir);
        return r;
    }

    private static Sample sample(Varve store, double seconds, long reclaimed0) {
        VarveMetrics m = store.metrics();
        return new Sample(seconds, m.archiveBytes(), m.archiveBytesPerLevel(), m.archiveBytesReclaimed() - reclaimed0, store.snapshots().size());
    }

    private Run report(Run r) {
        out.printf("  %-20s %,10.0f batches/s %,10.0f puts/s  %,4d checkpoints  archive %s%n", r.setup().label(), r.batchesPerSecond(),
                r.putsPerSecond(), r.checkpointsCompleted(), RetentionReport.size(r.archiveBytes()));
        return r;
    }

    /**
     * Section 5: w is declared rank 2 (eager), {@value #STEPS_BEFORE_V} small batches later v is declared rank 1,
     * then every key is overwritten and v is raised to 2 — so every leaf v reads is archived, and the copy lazy ranking
     * owes carries every leaf, as diffs against w's pages (which differ from v's only where those batches wrote). Read
     * as of v while v is inside the page window (page-based, from level 1), then after W + 1 newer snapshots and two
     * checkpoints (copied into level 2: diff-based); the current table, read with the same keys at both points, is
     * the baseline.
     */
    private AsOfReads asOfReads() throws IOException, DemoJob.MismatchException {
        Path dir = opts.dir.resolve("as-of");
        AsOfReads result;
        try (Varve store = Varve.open(config(dir, SEGREGATED))) {
            int window = store.config().snapshotPageWindow();
            VarveMetrics m = store.metrics();
            RankedUpdateLoad load = RankedUpdateLoad.preload(store, KEYS, BATCH, Ranking.FLAT, 0, 0, SEED);
            store.checkpoint().join();
            store.snapshotNow(2); // w: its level-2 pre-states are the bases v's diffs refer to
            for (int i = 0; i < STEPS_BEFORE_V; i++) load.step();
            long v = store.snapshotNow(1);
            long[] atV = load.valueIds();
            load.overwriteAll();
            store.rank(v, 2); // lazy ranking, inside the page window, after every leaf changed
            store.checkpoint().join(); // every pre-state v needs is in the archive
            int[] ids = new SplittableRandom(SEED + 1).ints(READS, 0, KEYS).toArray();
            byte[][] keys = Arrays.stream(ids).mapToObj(Keys::of).toArray(byte[][]::new);
            Table current = store.table(RankedUpdateLoad.TABLE);
            GetTimer timer = new GetTimer(ids, keys);
            double currentBefore = timer.medianNanos(current, load.valueIds(), "current table");
            double page;
            try (SnapshotView view = store.asOf(v)) {
                page = timer.medianNanos(view.table(RankedUpdateLoad.TABLE), atV, "as of v (page-based)");
            }
            long copied0 = m.archiveBytesCopiedByRanking();
            for (int i = 0; i <= window; i++) load.step(); // W + 1 newer snapshots, each after a small batch
            store.checkpoint().join(); // the first mark after W newer snapshots schedules the copy ...
            store.checkpoint().join(); // ... and by the end of this one it is done either way
            long copied = m.archiveBytesCopiedByRanking() - copied0;
            int rank = store.snapshots().stream().filter(i -> i.id() == v).mapToInt(SnapshotInfo::rank).findFirst().orElse(0);
            double currentAfter = timer.medianNanos(current, load.valueIds(), "current table");
            double diff;
            try (SnapshotView view = store.asOf(v)) {
                diff = timer.medianNanos(view.table(RankedUpdateLoad.TABLE), atV, "as of v (after the copy)");
            }
            result = new AsOfReads(window, rank, copied, m.diffCompactness(), currentBefore, page, currentAfter, diff, timer.checked);
        }
        StoreDirs.delete(dir);
        out.printf("  %-20s current %,.0f ns/get, as of v %,.0f ns/get (page-based), %,.0f ns/get (after W+1 snapshots, %s copied)%n",
                "as-of reads", result.currentBeforeNs(), result.pageNs(), result.diffNs(), RetentionReport.size(result.copied()));
        return result;
    }

    /**
     * Times the same {@value #READS} gets through a table: an untimed pass, then {@value #READ_PASSES} timed ones, the
     * median reported. Every key of the key space is checked first, and every value each pass read after it; a
     * wrong or missing value fails the job.
     */
    private static final class GetTimer {
        final int[] ids;
        final byte[][] keys;
        final byte[][] got;
        long checked;

        GetTimer(int[] ids, byte[][] keys) {
            this.ids = ids;
            this.keys = keys;
            this.got = new byte[keys.length][];
        }

        double medianNanos(Table t, long[] expected, String what) throws DemoJob.MismatchException {
            for (int k = 0; k < expected.length; k++) check(t.get(Keys.of(k)), k, expected, what);
            double[] nanos = new double[READ_PASSES];
            for (int pass = -1; pass < READ_PASSES; pass++) { // pass -1 warms up
                long start = System.nanoTime();
                for (int i = 0; i < keys.length; i++) got[i] = t.get(keys[i]);
                long elapsed = System.nanoTime() - start;
                for (int i = 0; i < keys.length; i++) check(got[i], ids[i], expected, what);
                if (pass >= 0) nanos[pass] = (double) elapsed / keys.length;
            }
            Arrays.sort(nanos);
            return nanos[READ_PASSES / 2];
        }

        private void check(byte[] actual, int key, long[] expected, String what) throws DemoJob.MismatchException {
            if (!Values.matches(actual, expected[key], RankedUpdateLoad.VALUE_BYTES))
                throw new DemoJob.MismatchException(what + ": key " + key + " read " + (actual == null ? "nothing" : "a different value")
                        + " than value " + expected[key] + ", which it should hold");
            checked++;
        }
    }
}
