package dev.varve.benchmarks;

import dev.varve.config.ConfigLimits;
import dev.varve.config.VarveConfig;
import dev.varve.config.WalSyncMode;
import dev.varve.engine.SnapshotView;
import dev.varve.engine.Varve;
import dev.varve.engine.VarveMetrics;

import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.ZonedDateTime;
import java.time.format.DateTimeFormatter;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;

/**
 * {@code --snapshot-cost}: what declaring snapshots costs a writer, swept over how often they are declared
 * ({@link SnapshotCadence}) x {@code walSyncMode} (LOG_ONLY, FSYNC) x capture (diffs, the default; diffs on chains of
 * at most 4; whole pages, {@code snapshotDiffChain(0)}), every row on a fresh store running the {@link SnapshotCostLoad} for a warm-up, then
 * the measured interval, then as-of gets through the latest snapshot and the first one of the interval. Rows run one
 * after another in this JVM; on a shared machine only ratios between rows seconds apart mean much. Prints one table
 * and writes it to {@value #FILE} in {@code --out}.
 */
final class SnapshotCostJob {
    static final String FILE = "SNAPSHOT-COST.md";
    static final long REGION_BYTES = 256L << 20;
    static final WalSyncMode[] SYNC_MODES = {WalSyncMode.LOG_ONLY, WalSyncMode.FSYNC};
    static final long SEED = 42;

    /** How pre-states are archived: {@code diffChain} is the {@code snapshotDiffChain} setting, -1 for the default. */
    enum Capture {
        DIFF("diff", -1),
        SHORT_CHAIN("diff chain 4", 4),
        WHOLE_PAGES("whole pages", 0);

        final String label;
        final int diffChain;

        Capture(String label, int diffChain) {
            this.label = label;
            this.diffChain = diffChain;
        }
    }

    /** The size of a run: the command line uses {@link #of(Options)}; tests shrink it (a store opens faster with a smaller region). */
    record Scale(int keys, long regionBytes, long warmupMillis, long measureMillis, int gets) {
        static Scale of(Options opts) {
            return new Scale(SnapshotCostLoad.KEYS, REGION_BYTES, 1000, opts.snapshotCostSeconds() * 1000L, 20_000);
        }
    }

    record Setup(SnapshotCadence cadence, WalSyncMode sync, Capture capture) {
        String dirName() {
            return (cadence.name() + "-" + sync.name() + "-" + capture.name()).toLowerCase(Locale.ROOT);
        }
    }

    /** As-of figures read after the interval; an id of -1 (none declared in the interval) leaves its view out. */
    record Reads(GetLatency.Micros current, long recentId, GetLatency.Micros recent, double recentOpenMillis, long oldId, GetLatency.Micros old,
                 double oldOpenMillis) {
    }

    /**
     * One row: counts and byte deltas cover the measured interval only. {@code writerCpuNanos} (-1 when the JVM cannot
     * tell) and the load average at the end say how much of a core the writer had: on a shared machine, not all of it.
     */
    record Row(Setup setup, long batches, long nanos, long declarations, long archiveBytesWritten, long walBytes, long throttledNanos,
               long writerCpuNanos, long jitMillis, String loadAverage, Reads reads) {
        double batchesPerSecond() {
            return batches / (nanos / 1e9);
        }

        long puts() {
            return batches * SnapshotCostLoad.BATCH;
        }
    }

    private final Options opts;
    private final PrintStream out;
    private final Scale scale;

    SnapshotCostJob(Options opts, PrintStream out) {
        this(opts, out, Scale.of(opts));
    }

    SnapshotCostJob(Options opts, PrintStream out, Scale scale) {
        this.opts = opts;
        this.out = out;
        this.scale = scale;
    }

    /** Runs every row, prints the table and writes the report; returns the report's path. */
    Path run() throws IOException, DemoJob.MismatchException {
        long t0 = System.nanoTime();
        StoreDirs.wipe(opts.dir);
        MachineInfo machine = MachineInfo.probe(opts.dir);
        String load = String.format("%,d keys of 8 bytes, %d-byte values, preloaded and checkpointed; one writer, atomic batches of %d "
                        + "overwrites of distinct random keys (same value per batch slot, byte 0 bumped each batch); data region %d MiB, "
                        + "default checkpoint frequency; %,d ms warm-up (not counted), then %,d ms measured per row", scale.keys(),
                SnapshotCostLoad.VALUE_BYTES, SnapshotCostLoad.BATCH, scale.regionBytes() >> 20, scale.warmupMillis(), scale.measureMillis());
        out.println("snapshot cost: snapshot cadence x walSyncMode x capture, each row on a fresh store; " + load);
        out.println("machine: " + machine.oneLine());
        warmUp();
        List<Row> rows = new ArrayList<>();
        for (WalSyncMode sync : SYNC_MODES) {
            for (Capture capture : Capture.values()) {
                for (SnapshotCadence cadence : SnapshotCadence.values()) rows.add(progress(measure(new Setup(cadence, sync, capture))));
            }
        }
        StoreDirs.delete(opts.dir);
        String table = table(rows);
        out.println();
        out.print(table);
        List<String> notes = notes();
        for (String n : notes) out.println("  " + n);
        Path file = write(machine, load, table, notes, (System.nanoTime() - t0) / 60e9);
        out.printf("%nreport: %s%n", file);
        return file;
    }

    /**
     * Untimed rows of every code path the table measures, in rounds until the JIT compiler worked at most
     * {@value CompareChild#SETTLED_JIT_PERCENT}% of a round (at most {@value CompareChild#WARMUP_ROUNDS} rounds; one when
     * the JVM does not time its compiler). One row was not enough: in a probe of the after-every-batch row the compiler
     * still took 38% of a core 3 to 9 s after the start, and the writer had 73% of its core against 86% once it settled
     * — on two cores the JIT's work falls on some rows and not others, and on the 'none' baselines every ratio is taken
     * against.
     */
    private void warmUp() throws IOException, DemoJob.MismatchException {
        List<Setup> paths = new ArrayList<>();
        for (WalSyncMode sync : SYNC_MODES) {
            for (SnapshotCadence c : List.of(SnapshotCadence.NONE, SnapshotCadence.EVERY_BATCH, SnapshotCadence.EVERY_1_MS))
                paths.add(new Setup(c, sync, Capture.DIFF));
        }
        paths.add(new Setup(SnapshotCadence.EVERY_BATCH, WalSyncMode.LOG_ONLY, Capture.WHOLE_PAGES));
        for (int round = 1; round <= CompareChild.WARMUP_ROUNDS; round++) {
            long t0 = System.nanoTime();
            CpuTimes c0 = CpuTimes.now();
            for (Setup s : paths) measure(s);
            long jitMillis = CpuTimes.now().since(c0).compileMillis();
            long elapsed = System.nanoTime() - t0;
            out.printf("JVM warm-up round %d: %d untimed rows in %.1f s, JIT compiling %,d ms%n", round, paths.size(), elapsed / 1e9, jitMillis);
            if (CompareChild.jitSettled(jitMillis, elapsed)) return;
        }
    }

    private Row measure(Setup s) throws IOException, DemoJob.MismatchException {
        Path dir = opts.dir.resolve(s.dirName());
        VarveConfig.Builder config = opts.config(dir).walSyncMode(s.sync()).dataRegionSize(scale.regionBytes());
        if (s.capture().diffChain >= 0) config.snapshotDiffChain(s.capture().diffChain);
        Row row;
        try (Varve store = Varve.open(config.build())) {
            SnapshotCostLoad load = SnapshotCostLoad.preload(store, s.cadence(), scale.keys(), SEED);
            store.checkpoint().join(); // the preload's pages are on disk; the warm-up starts clean
            runFor(load, scale.warmupMillis());
            VarveMetrics m = store.metrics();
            long batches0 = load.batches();
            long declarations0 = load.declarations();
            long archive0 = archiveWritten(m);
            long wal0 = m.walBytesWritten();
            long throttled0 = m.throttledNanos();
            long cpu0 = CpuTimes.currentThread(); // the writer is the thread that runs the job
            CpuTimes jit0 = CpuTimes.now();
            load.markNextDeclaration();
            long nanos = runFor(load, scale.measureMillis());
            long cpu = cpu0 < 0 ? -1 : CpuTimes.currentThread() - cpu0;
            long jitMillis = CpuTimes.now().since(jit0).compileMillis();
            String loadAverage = MachineInfo.currentLoadAverage().split(" ")[0];
            long declarations = load.declarations() - declarations0;
            row = new Row(s, load.batches() - batches0, nanos, declarations, archiveWritten(m) - archive0, m.walBytesWritten() - wal0,
                    m.throttledNanos() - throttled0, cpu, jitMillis, loadAverage, s.cadence() == SnapshotCadence.NONE ? null : reads(store, load, declarations > 0));
        }
        StoreDirs.delete(dir);
        return row;
    }

    /** Bytes the archive has taken in since open: what it holds plus what reclamation gave back. */
    static long archiveWritten(VarveMetrics m) {
        return m.archiveBytes() + m.archiveBytesReclaimed();
    }

    /** Steps the load for {@code millis}, reading the clock once per batch; returns the nanoseconds it ran. */
    private static long runFor(SnapshotCostLoad load, long millis) {
        long start = System.nanoTime();
        long end = start + millis * 1_000_000;
        long now = start;
        do {
            load.step(now);
        } while ((now = System.nanoTime()) < end);
        return now - start;
    }

    /**
     * Gets on the current table, then as of the latest snapshot and the first one of the interval (when there was one),
     * after a checkpoint: the work the writer left behind (captures to archive, dirty pages) is done first, so it does
     * not take a core from the gets of one row and not another's.
     */
    private Reads reads(Varve store, SnapshotCostLoad load, boolean declaredInInterval) throws DemoJob.MismatchException {
        store.checkpoint().join();
        GetLatency gets = new GetLatency(scale.gets(), load.keys(), SEED + 1);
        long[] now = load.tokensNow();
        GetLatency.Micros current = gets.time(store.table(SnapshotCostLoad.TABLE), (v, k) -> load.matches(v, k, now[k]), "current table");
        if (!declaredInInterval) return new Reads(current, -1, null, Double.NaN, -1, null, Double.NaN);
        long recentId = load.lastId();
        long[] atRecent = load.tokensAtLastDeclaration();
        long[] atOld = load.markedTokens();
        double[] openMillis = new double[2];
        GetLatency.Micros recent = asOf(store, recentId, gets, (v, k) -> load.matches(v, k, atRecent[k]), openMillis, 0);
        GetLatency.Micros old = asOf(store, load.markedId(), gets, (v, k) -> load.matches(v, k, atOld[k]), openMillis, 1);
        return new Reads(current, recentId, recent, openMillis[0], load.markedId(), old, openMillis[1]);
    }

    private static GetLatency.Micros asOf(Varve store, long id, GetLatency gets, GetLatency.Expected expected, double[] openMillis, int slot)
            throws DemoJob.MismatchException {
        long start = System.nanoTime();
        try (SnapshotView view = store.asOf(id)) {
            openMillis[slot] = (System.nanoTime() - start) / 1e6;
            return gets.time(view.table(SnapshotCostLoad.TABLE), expected, "as of snapshot " + id);
        }
    }

    private Row progress(Row r) {
        Setup s = r.setup();
        out.printf("  %-18s %-8s %-11s %,10.0f batches/s  %,7d snapshots  archive %s%n", s.cadence().label, s.sync(), s.capture().label,
                r.batchesPerSecond(), r.declarations(), RetentionReport.size(r.archiveBytesWritten()));
        return r;
    }

    // ---------------------------------------------------------------- output

    /** The median batches/s of the rows without snapshots under {@code sync}. */
    static double noneBaseline(List<Row> rows, WalSyncMode sync) {
        return Medians.of(rows.stream().filter(n -> n.setup().cadence() == SnapshotCadence.NONE && n.setup().sync() == sync)
                .mapToDouble(Row::batchesPerSecond).toArray());
    }

    static String table(List<Row> rows) {
        TextTable t = new TextTable("cadence", List.of("sync", "capture", "batches/s", "puts/s", "vs none", "snapshots", "archive written",
                "archive/changed", "WAL B/put", "throttled ms", "get current us p50/p99", "as-of recent us p50/p99", "as-of old us p50/p99", "old first pass p50/p99",
                "open ms recent/old", "writer CPU", "JIT ms", "load 1m"));
        for (Row r : rows) {
            double none = noneBaseline(rows, r.setup().sync());
            Reads reads = r.reads();
            boolean views = reads != null && reads.recent() != null;
            t.row(r.setup().cadence().label, List.of(r.setup().sync().name(), r.setup().capture().label, String.format("%,.0f", r.batchesPerSecond()),
                    String.format("%,.0f", r.batchesPerSecond() * SnapshotCostLoad.BATCH),
                    String.format("%.2fx", r.batchesPerSecond() / none), String.format("%,d", r.declarations()),
                    RetentionReport.size(r.archiveBytesWritten()),
                    r.puts() == 0 ? "-" : String.format("%.1f", (double) r.archiveBytesWritten() / (r.puts() * SnapshotCostLoad.CHANGED_BYTES_PER_PUT)),
                    r.puts() == 0 ? "-" : String.format("%.0f", (double) r.walBytes() / r.puts()),
                    String.format("%,d", r.throttledNanos() / 1_000_000),
                    reads == null ? "-" : reads.current().cell(), views ? reads.recent().cell() : "-", views ? reads.old().cell() : "-",
                    views ? reads.old().firstCell() : "-",
                    views ? String.format("%.1f / %.1f", reads.recentOpenMillis(), reads.oldOpenMillis()) : "-",
                    r.writerCpuNanos() < 0 ? "-" : String.format("%.0f%%", 100.0 * r.writerCpuNanos() / r.nanos()),
                    r.jitMillis() < 0 ? "-" : String.format("%,d", r.jitMillis()), r.loadAverage()));
        }
        ByteArrayOutputStream buf = new ByteArrayOutputStream();
        t.print(new PrintStream(buf, true, StandardCharsets.UTF_8));
        return buf.toString(StandardCharsets.UTF_8);
    }

    private List<String> notes() {
        return List.of("Cadence: 'after every batch' declares a snapshot right after each batch; 'every N' declares one from the writer "
                        + "thread after the first batch that starts N or more after the previous declaration (the clock is read between batches).",
                "Capture: diff is the default configuration (snapshotDiffChain " + ConfigLimits.SNAPSHOT_DIFF_CHAIN_DEFAULT
                        + "); diff chain 4 is snapshotDiffChain(4), shorter chains (fewer reads per as-of page, more whole pages); whole "
                        + "pages is snapshotDiffChain(0), every pre-state archived as a whole page (the 'before' figures, from the same run).",
                "vs none: batches/s against the median of the 'none' rows of the same walSyncMode (one per capture setting, which does nothing without "
                        + "snapshots: three measurements of the same load, so one lucky or unlucky row does not move every ratio of its column). Snapshots: "
                        + "declared in the measured interval.",
                "Archive written: growth of archiveBytes() + archiveBytesReclaimed() (Pagelog, Maplog and its Skippy levels) over the "
                        + "measured interval, read at its edges without waiting for the background archiver (its lag at the start and at "
                        + "the end roughly cancel). Archive/changed: that over the bytes the puts changed, "
                        + SnapshotCostLoad.CHANGED_BYTES_PER_PUT + " per put (8-byte key + " + SnapshotCostLoad.VALUE_BYTES + "-byte value).",
                "WAL B/put: walBytesWritten() growth over the interval per put, snapshot declarations included. Throttled: writer time "
                        + "spent throttled in the interval (checkpoint buffer, data region head-room, a full capture buffer).",
                "Writer CPU: CPU time of the writer thread over the interval against its wall time (under FSYNC it waits for the disk); "
                        + "JIT ms: the JIT compiler's time in the interval (the job first runs untimed rows of every path until the "
                        + "compiler settles); load 1m: the one-minute load average when the interval ended. Where other processes took the "
                        + "cores, the writer's figures fall with its CPU share: compare rows whose writer had a like share.",
                String.format("Gets: after the interval and a checkpoint, %,d random gets through the current table, then through asOf() of the latest "
                        + "snapshot (recent) and of the first declared in the interval (old), each in two passes over the same keys; "
                        + "microseconds per get timed one by one with System.nanoTime() (median / p99) in the second pass, every value "
                        + "of both passes checked against what the key held then. Old first pass: the first pass over the old view, "
                        + "which rebuilds every diff-based page it reaches (the Pagelog then keeps up to 4,096 rebuilt pages, 16 MiB; a "
                        + "working set larger than that reads like the first pass). Open: time of the asOf() call. '-': no view (no snapshot, or none "
                        + "declared in the interval).", scale.gets()));
    }

    private Path write(MachineInfo machine, String load, String table, List<String> notes, double minutes) throws IOException {
        StringBuilder sb = new StringBuilder("# Varve snapshot cost: throughput, archive and as-of reads vs snapshot cadence\n\n");
        sb.append("Generated by `java -jar benchmarks/target/varve-benchmarks.jar --snapshot-cost --seconds ")
                .append(scale.measureMillis() / 1000).append("` on ").append(ZonedDateTime.now().format(DateTimeFormatter.ofPattern("yyyy-MM-dd HH:mm z")))
                .append(String.format(Locale.ROOT, " in %.1f minutes; every row ran in that one invocation, on a fresh store, after untimed rows "
                        + "of every path, in rounds until the JIT compiler settled.%n%n", minutes));
        sb.append("- Machine: ").append(machine.oneLine()).append("; load average at the end ").append(MachineInfo.currentLoadAverage()).append(".\n");
        sb.append("- Load: ").append(load).append(".\n");
        sb.append("- On a shared or virtual machine absolute numbers move from run to run; read the ratios between rows.\n\n");
        sb.append("```\n").append(table).append("```\n\n");
        for (String n : notes) sb.append("- ").append(n).append('\n');
        Files.createDirectories(opts.out);
        Path file = opts.out.resolve(FILE);
        Files.writeString(file, sb.toString(), StandardCharsets.UTF_8);
        return file.toAbsolutePath();
    }
}
