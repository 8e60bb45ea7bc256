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

import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.time.ZonedDateTime;
import java.time.format.DateTimeFormatter;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Locale;
import java.util.SplittableRandom;
import java.util.function.Function;
import java.util.stream.Collectors;
import java.util.stream.IntStream;

/**
 * {@code --retention}: Thresher's claims about ranked retention, measured side by side in one run. Every
 * configuration runs the {@link RankedUpdateLoad} (random overwrites in atomic batches, a snapshot after each batch)
 * on a fresh store, one after another in this JVM after one untimed warm-up, with a checkpoint every
 * {@value RecoveryModeComparison#CHECKPOINT_MILLIS} ms; on a shared machine only the ratios between configurations
 * that ran seconds apart mean much. Five sections: checkpoint cost against retention fraction (Thresher's Table 1),
 * the archive plateau of a bounded policy, lazy against eager ranking, diff compactness against update density, and
 * as-of read latency before and after a lazily ranked snapshot is copied into its level. Prints the tables and
 * writes them, with a chart of the plateau, to {@value #FILE} in {@code --out}.
 */
final class RetentionComparison {
    static final String FILE = "RETENTION.md";
    static final String PLATEAU_CHART = "retention-archive-plateau.svg";
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

    /** How the figures of a {@link Run} were taken, for the notes under its table. */
    static final String AFTER_THE_RUN = "Throughput, checkpoints and throttling cover the timed run; the archive figures (and copies) are read "
            + "after one more checkpoint once the timer stopped (\"checkpoint after the run\"), so the archive has caught up and reclamation "
            + "has had its turn.";

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
    private final StringBuilder md = new StringBuilder();

    RetentionComparison(Options opts, PrintStream out) {
        this.opts = opts;
        this.out = out;
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
        printCheckpointCost(costs);

        Run plateau = report(measure(new Setup("bounded 1/" + RANK2_EVERY, BOUNDED, KEYS, BATCH, Ranking.EAGER, RANK2_EVERY, 0),
                PLATEAU_FACTOR * seconds, true));
        printPlateau(plateau);

        List<Run> ranking = List.of(report(measure(twoLevels("eager", RANK2_EVERY, Ranking.EAGER, 0), seconds, false)),
                report(measure(twoLevels("lazy at once", RANK2_EVERY, Ranking.LAZY, 0), seconds, false)),
                report(measure(twoLevels("lazy after " + RANK_DELAY, RANK2_EVERY, Ranking.LAZY, RANK_DELAY), seconds, false)));
        printLazyVsEager(ranking);

        List<Run> density = new ArrayList<>();
        for (int d = 0; d < DENSITIES.length; d++) {
            density.add(report(measure(new Setup(DENSITY_NAMES[d], SEGREGATED, DENSITIES[d][0], DENSITIES[d][1], Ranking.LAZY, RANK2_EVERY, RANK_DELAY),
                    seconds, false)));
        }
        printDensity(density);

        printAsOf(asOfReads());

        StoreDirs.delete(opts.dir);
        double minutes = (System.nanoTime() - t0) / 60e9;
        Path file = write(machine, load, minutes);
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
                r.putsPerSecond(), r.checkpointsCompleted(), size(r.archiveBytes()));
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
                "as-of reads", result.currentBeforeNs(), result.pageNs(), result.diffNs(), size(result.copied()));
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

    // ---------------------------------------------------------------- sections

    private void printCheckpointCost(List<Run> runs) {
        Run none = runs.get(0);
        Run flat = runs.get(1);
        TextTable t = new TextTable("", labels(runs));
        t.row("batches/s", cells(runs, r -> String.format("%,.0f", r.batchesPerSecond())));
        t.row("puts/s", cells(runs, r -> String.format("%,.0f", r.putsPerSecond())));
        t.row("throughput vs none", cells(runs, r -> ratio(r.batchesPerSecond(), none.batchesPerSecond())));
        t.row("throughput vs unsegregated", cells(runs, r -> ratio(r.batchesPerSecond(), flat.batchesPerSecond())));
        t.row("rank-2 snapshots", cells(runs, r -> String.format("%,d", r.rank2Snapshots())));
        t.row("checkpoints", cells(runs, r -> Long.toString(r.checkpointsCompleted())));
        t.row("avg checkpoint total ms", cells(runs, r -> millis(r.avgCheckpointMillis())));
        t.row("avg checkpoint vs unsegregated", cells(runs, r -> ratio(r.avgCheckpointMillis(), flat.avgCheckpointMillis())));
        t.row("throttled ms", cells(runs, r -> String.format("%,d", r.throttledNanos() / 1_000_000)));
        t.row("checkpoint after the run ms", cells(runs, r -> millis(r.endCheckpointNanos() / 1e6)));
        t.row("archive at end", cells(runs, r -> size(r.archiveBytes())));
        t.row("archive per level", cells(runs, r -> perLevel(r.perLevel())));
        t.row("archive reclaimed", cells(runs, r -> size(r.reclaimed())));
        t.row("copied by ranking", cells(runs, r -> size(r.copied())));
        t.row("dead bytes at end", cells(runs, r -> size(r.deadBytes())));
        t.row("live snapshots at end", cells(runs, r -> String.format("%,d", r.liveSnapshots())));
        List<String> notes = new ArrayList<>();
        notes.add("none: no snapshot; unsegregated: " + UNSEGREGATED + ", every snapshot rank 1; segregated 1/f: " + SEGREGATED
                + ", every f-th snapshot declared rank 2 (eager), the rest rank 1.");
        notes.add(AFTER_THE_RUN + " Dead bytes: archiveDeadBytes(), the fragmentation whole-segment reclamation leaves.");
        long eagerCopied = runs.stream().filter(r -> r.setup().ranking() == Ranking.EAGER).mapToLong(Run::copied).sum();
        notes.add(eagerCopied == 0 ? "Eager ranking copied nothing, as it should."
                : "UNEXPECTED: eager ranking copied " + size(eagerCopied) + " (it should copy nothing).");
        notes.add(checkpointNote(runs));
        section("1. Checkpoint and cleaning cost vs retention fraction",
                "Thresher, Table 1: segregating the rare long-lived snapshots eagerly (at declaration) should cost no noticeable "
                        + "throughput or checkpoint time compared with keeping every snapshot in one level.", t, notes);
    }

    private static String checkpointNote(List<Run> runs) {
        long missed = runs.stream().mapToLong(r -> r.checkpoints().missed()).sum();
        return "Checkpoint times are averages over the checkpoints completed in the timed run and sampled (CheckpointTally, every "
                + CheckpointTally.SAMPLE_MILLIS + " ms; '-' when none completed); " + (missed == 0 ? "none was missed." : missed + " were missed by the sampler.");
    }

    private void printPlateau(Run r) throws IOException {
        List<Sample> samples = r.samples();
        TextTable t = new TextTable("s", List.of("archive", "level 1", "level 2", "reclaimed", "written", "live snapshots"));
        for (Sample s : samples) {
            t.row(String.format("%.1f", s.seconds()), List.of(size(s.archiveBytes()), size(level(s.perLevel(), 0)), size(level(s.perLevel(), 1)),
                    size(s.reclaimed()), size(s.archiveBytes() + s.reclaimed()), Integer.toString(s.liveSnapshots())));
        }
        List<String> notes = new ArrayList<>();
        notes.add(String.format("%s: %s, one snapshot in %d declared rank 2 (eager); %,.0f batches/s over %.0f s; sampled every %d ms "
                        + "(written = held + reclaimed).", r.setup().label(), BOUNDED, RANK2_EVERY, r.batchesPerSecond(), r.nanos() / 1e9,
                SAMPLE_MILLIS));
        int n = samples.size();
        if (n >= 3) { // held size saws up and down as whole segments go: its peak per third of the run levels off, the written total does not
            String peaks = IntStream.range(0, 3).mapToObj(i -> size(samples.subList(i * n / 3, (i + 1) * n / 3).stream()
                    .mapToLong(Sample::archiveBytes).max().orElse(0))).collect(Collectors.joining(" / "));
            Sample end = samples.get(n - 1);
            notes.add(String.format("Peak archive held in each third of the run: %s; written in total %s, held at the end %s.", peaks,
                    size(end.archiveBytes() + end.reclaimed()), size(end.archiveBytes())));
        }
        writePlateauChart(r);
        section("2. Archive plateau", "With every level bounded, reclamation gives back whole segments as fast as snapshots expire: "
                + "the archive should stop growing while writing goes on.", t, notes);
        md.append("![archive bytes over time](").append(PLATEAU_CHART).append(")\n\n");
    }

    private void writePlateauChart(Run r) throws IOException {
        List<Sample> samples = r.samples();
        double[] x = samples.stream().mapToDouble(Sample::seconds).toArray();
        SvgChart chart = new SvgChart("Archive size, " + BOUNDED + ", 1/" + RANK2_EVERY + " rank 2", "seconds", "MiB");
        chart.add("archive held", x, samples.stream().mapToDouble(s -> s.archiveBytes() / 1048576.0).toArray(), false);
        chart.add("level 1", x, samples.stream().mapToDouble(s -> level(s.perLevel(), 0) / 1048576.0).toArray(), false);
        chart.add("level 2", x, samples.stream().mapToDouble(s -> level(s.perLevel(), 1) / 1048576.0).toArray(), false);
        chart.add("written (held + reclaimed)", x, samples.stream().mapToDouble(s -> (s.archiveBytes() + s.reclaimed()) / 1048576.0).toArray(), true);
        Files.createDirectories(opts.out);
        Files.writeString(opts.out.resolve(PLATEAU_CHART), chart.toSvg(), StandardCharsets.UTF_8);
    }

    private void printLazyVsEager(List<Run> runs) {
        Run eager = runs.get(0);
        TextTable t = new TextTable("", labels(runs));
        t.row("batches/s", cells(runs, r -> String.format("%,.0f", r.batchesPerSecond())));
        t.row("throughput vs eager", cells(runs, r -> ratio(r.batchesPerSecond(), eager.batchesPerSecond())));
        t.row("rank-2 snapshots", cells(runs, r -> String.format("%,d", r.rank2Snapshots())));
        t.row("checkpoints", cells(runs, r -> Long.toString(r.checkpointsCompleted())));
        t.row("avg checkpoint total ms", cells(runs, r -> millis(r.avgCheckpointMillis())));
        t.row("avg checkpoint vs eager", cells(runs, r -> ratio(r.avgCheckpointMillis(), eager.avgCheckpointMillis())));
        t.row("throttled ms", cells(runs, r -> String.format("%,d", r.throttledNanos() / 1_000_000)));
        t.row("checkpoint after the run ms", cells(runs, r -> millis(r.endCheckpointNanos() / 1e6)));
        t.row("archive at end", cells(runs, r -> size(r.archiveBytes())));
        t.row("archive per level", cells(runs, r -> perLevel(r.perLevel())));
        t.row("copied by ranking", cells(runs, r -> size(r.copied())));
        t.row("diff compactness R", cells(runs, r -> compactness(r.compactness())));
        t.row("archive reclaimed", cells(runs, r -> size(r.reclaimed())));
        List<String> notes = new ArrayList<>();
        notes.add(SEGREGATED + ", one snapshot in " + RANK2_EVERY + " ranked 2: eager declares it with rank 2; lazy declares it with rank 1 "
                + "and calls rank(id, 2) right after (\"at once\") or " + RANK_DELAY + " batches later, inside the page window. Pages first "
                + "changed after the raise are recorded at level 2 from then on; the ones changed between declaration and raise are copied "
                + "into level 2 (as diffs against level 2's pages) at the first checkpoint after W newer snapshots exist — nothing for a "
                + "raise at once.");
        notes.add("R = diff bytes / full-page bytes of what lazy ranking copied; NaN until a copy happened. " + AFTER_THE_RUN);
        notes.add(checkpointNote(runs));
        section("3. Lazy vs eager ranking", "Thresher: ranking lazily costs a copy of each re-ranked snapshot, made cheap by copying diffs "
                + "rather than pages; eager ranking copies nothing.", t, notes);
    }

    private void printDensity(List<Run> runs) {
        TextTable t = new TextTable("", labels(runs));
        t.row("key space", cells(runs, r -> String.format("%,d", r.setup().keys())));
        t.row("puts per batch", cells(runs, r -> Integer.toString(r.setup().batchSize())));
        t.row("updates between rank-2 snapshots", cells(runs, r -> String.format("%,d", r.setup().every() * r.setup().batchSize())));
        t.row("  per key", cells(runs, r -> String.format("%.3f", (double) r.setup().every() * r.setup().batchSize() / r.setup().keys())));
        t.row("batches/s", cells(runs, r -> String.format("%,.0f", r.batchesPerSecond())));
        t.row("rank-2 snapshots", cells(runs, r -> String.format("%,d", r.rank2Snapshots())));
        t.row("copied by ranking", cells(runs, r -> size(r.copied())));
        t.row("diff compactness R", cells(runs, r -> compactness(r.compactness())));
        t.row("full-page equivalent (copied / R)", cells(runs, r -> r.compactness() > 0 ? size(Math.round(r.copied() / r.compactness())) : "-"));
        t.row("diffs smaller than pages by", cells(runs, r -> r.compactness() > 0 ? String.format("%.1fx", 1 / r.compactness()) : "-"));
        t.row("checkpoints", cells(runs, r -> Long.toString(r.checkpointsCompleted())));
        t.row("avg checkpoint total ms", cells(runs, r -> millis(r.avgCheckpointMillis())));
        t.row("checkpoint after the run ms", cells(runs, r -> millis(r.endCheckpointNanos() / 1e6)));
        t.row("archive at end", cells(runs, r -> size(r.archiveBytes())));
        List<String> notes = List.of("Lazy ranking only (" + SEGREGATED + ", one snapshot in " + RANK2_EVERY + " declared rank 1 and raised to 2 "
                + RANK_DELAY + " batches later: the copy carries the pages changed in those batches). "
                + "The copy's diffs are taken against the pages level 2 holds for the previous rank-2 snapshot, so they carry the updates of the "
                + RANK2_EVERY + " batches between the two: the 'per key' row. Low density: a page that changed mostly changed once; high: "
                + "most values of every page changed.");
        section("4. Diff compactness R vs update density", "Thresher: at low update density the diffs lazy ranking copies are more than "
                + "10x smaller than the pages they stand for (R < 0.1); R grows with the changes each page sees.", t, notes);
    }

    private void printAsOf(AsOfReads a) {
        TextTable t = new TextTable("", List.of("ns/get", "vs current", "vs page-based"));
        t.row("current table (before)", List.of(String.format("%,.0f", a.currentBeforeNs()), "1.00x", "-"));
        t.row("as of v, page-based", List.of(String.format("%,.0f", a.pageNs()), ratio(a.pageNs(), a.currentBeforeNs()), "1.00x"));
        t.row("current table (after)", List.of(String.format("%,.0f", a.currentAfterNs()), "1.00x", "-"));
        t.row(a.copied() > 0 ? "as of v, diff-based" : "as of v, after W+1 (no copy)",
                List.of(String.format("%,.0f", a.diffNs()), ratio(a.diffNs(), a.currentAfterNs()), ratio(a.diffNs(), a.pageNs())));
        List<String> notes = new ArrayList<>();
        notes.add(String.format("%,d keys preloaded; w declared rank 2, %d batches of %d, v declared rank 1, every key overwritten, v raised "
                        + "to 2, checkpointed. Each figure: median of %d passes of the same %,d random gets, after one untimed pass. Then %d "
                        + "(W + 1) snapshots, each after a batch of %d, and two checkpoints: %s copied by ranking (R %s); v's rank now %d. "
                        + "Diff-based reads take the extent record and its base page (two reads where page-based takes one).",
                KEYS, STEPS_BEFORE_V, BATCH, READ_PASSES, READS, a.window() + 1, BATCH, size(a.copied()), compactness(a.compactness()), a.rankOfV()));
        notes.add(String.format("%,d values checked (every key, then every value each pass read): all as written before v (as-of) or "
                + "last written (current).", a.valuesChecked()));
        if (a.copied() == 0) notes.add("No lazy-ranking copy happened (0 bytes copied): the second as-of figure is still page-based.");
        section("5. As-of read latency, page-based vs diff-based", "Thresher's hybrid: recent snapshots are read from whole archived "
                + "pages; older lazily ranked ones from diffs applied to their level's pages, which should cost some read latency.", t, notes);
    }

    // ---------------------------------------------------------------- output

    /** Prints a section and adds it to the markdown report (the table as preformatted text). */
    private void section(String title, String claim, TextTable table, List<String> notes) {
        ByteArrayOutputStream buf = new ByteArrayOutputStream();
        PrintStream ps = new PrintStream(buf, true, StandardCharsets.UTF_8);
        table.print(ps);
        String text = buf.toString(StandardCharsets.UTF_8);
        out.printf("%n== %s ==%n%s%n", title, claim);
        out.print(text);
        for (String n : notes) out.println("  " + n);
        md.append("## ").append(title).append("\n\n").append(claim).append("\n\n```\n").append(text).append("```\n\n");
        for (String n : notes) md.append("- ").append(n).append('\n');
        md.append('\n');
    }

    private Path write(MachineInfo machine, String load, double minutes) throws IOException {
        Files.createDirectories(opts.out);
        StringBuilder sb = new StringBuilder();
        sb.append("# Varve retention benchmarks: Thresher's claims\n\n");
        sb.append("Generated by `java -jar benchmarks/target/varve-benchmarks.jar --retention --seconds ").append(opts.retentionSeconds())
                .append("` on ").append(ZonedDateTime.now().format(DateTimeFormatter.ofPattern("yyyy-MM-dd HH:mm z")))
                .append(String.format(Locale.ROOT, " in %.1f minutes. ", minutes))
                .append("Every figure comes from that one invocation: the configurations ran one after another in one JVM, each on a fresh "
                        + "store, after one untimed warm-up run.\n\n");
        sb.append("- Machine: ").append(machine.oneLine()).append("; load average at the end ").append(MachineInfo.currentLoadAverage()).append(".\n");
        sb.append("- Load: ").append(load).append(".\n");
        sb.append("- On a shared or virtual machine the absolute numbers move from run to run; read the ratios between configurations "
                + "that ran seconds apart.\n\n");
        sb.append(md);
        Path file = opts.out.resolve(FILE);
        Files.writeString(file, sb.toString(), StandardCharsets.UTF_8);
        return file.toAbsolutePath();
    }

    private static List<String> labels(List<Run> runs) {
        return runs.stream().map(r -> r.setup().label()).toList();
    }

    private static List<String> cells(List<Run> runs, Function<Run, String> f) {
        return runs.stream().map(f).toList();
    }

    private static long level(long[] perLevel, int i) {
        return i < perLevel.length ? perLevel[i] : 0;
    }

    private static String perLevel(long[] perLevel) {
        return Arrays.stream(perLevel).mapToObj(RetentionComparison::size).collect(Collectors.joining(" / "));
    }

    private static String millis(double ms) {
        return Double.isNaN(ms) ? "-" : String.format("%,.1f", ms);
    }

    private static String compactness(double r) {
        return Double.isNaN(r) ? "NaN (no copy)" : String.format("%.3f", r);
    }

    /** Bytes, in the largest unit that keeps three digits of precision. */
    static String size(long bytes) {
        if (bytes < 10 * 1024) return String.format("%,d B", bytes);
        if (bytes < 10 * 1048576L) return String.format("%,.1f KiB", bytes / 1024.0);
        return String.format("%,.1f MiB", bytes / 1048576.0);
    }

    private static String ratio(double v, double base) {
        return base == 0 || Double.isNaN(v) || Double.isNaN(base) ? "-" : String.format("%.2fx", v / base);
    }
}
