package dev.varve.benchmarks;

import dev.varve.config.ConfigLimits;
import dev.varve.config.WalSyncMode;
import dev.varve.engine.SnapshotView;
import dev.varve.engine.Varve;

import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.ZonedDateTime;
import java.time.format.DateTimeFormatter;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Locale;
import java.util.function.ToDoubleFunction;

/**
 * {@code --chain-cost}: what each {@code snapshotDiffChain} bound buys and costs — the archive's bytes per byte changed
 * against the first as-of read of old history — on the same history for every bound. Each row opens a fresh store
 * (LOG_ONLY) and runs the {@link SnapshotCostLoad} with a snapshot after every batch for a fixed number of batches, not
 * a fixed time, so every row archives the same captures and its old snapshot sits at the same place in its chains (in
 * {@code --snapshot-cost}'s timed rows it falls elsewhere in each, and its first pass moves with it); then it marks the
 * snapshot declared next, runs twice as many batches more, checkpoints, and times random gets as of the marked
 * snapshot in two passes. Rounds of every bound, after one untimed round; one JVM. Prints one table and writes it to
 * {@value #FILE} in {@code --out}.
 */
final class ChainCostJob {
    static final String FILE = "CHAIN-COST.md";
    /** Whole pages first (each round's ratios are against it), then bounds up to the default. */
    static final int[] BOUNDS = {0, 7, 15, 31, ConfigLimits.SNAPSHOT_DIFF_CHAIN_DEFAULT};
    static final long SEED = 42;

    /** The size of a run: the command line uses {@link #DEFAULT}; tests shrink it. */
    record Scale(int keys, long regionBytes, int batchesBefore, int gets, int rounds) {
        static final Scale DEFAULT = new Scale(SnapshotCostLoad.KEYS, SnapshotCostJob.REGION_BYTES, 40_000, 20_000, 3);
    }

    /** One bound in one round: the batches after the mark, their time and archive bytes, and the old view's gets. */
    record Row(int bound, int round, long batches, long nanos, long archiveBytes, GetLatency.Micros old) {
        double bytesPerByteChanged() {
            return archiveBytes / (double) (batches * SnapshotCostLoad.BATCH * SnapshotCostLoad.CHANGED_BYTES_PER_PUT);
        }

        double batchesPerSecond() {
            return batches / (nanos / 1e9);
        }
    }

    private final Options opts;
    private final PrintStream out;
    private final Scale scale;

    ChainCostJob(Options opts, PrintStream out) {
        this(opts, out, Scale.DEFAULT);
    }

    ChainCostJob(Options opts, PrintStream out, Scale scale) {
        this.opts = opts;
        this.out = out;
        this.scale = scale;
    }

    /** Runs every row, prints the table and writes the report; returns the report's path. */
    Path run() throws IOException, DemoJob.MismatchException {
        long t0 = System.nanoTime();
        StoreDirs.wipe(opts.dir);
        MachineInfo machine = MachineInfo.probe(opts.dir);
        String load = String.format("%,d keys of 8 bytes, %d-byte values, preloaded and checkpointed; one writer, LOG_ONLY, atomic batches "
                        + "of %d overwrites of distinct random keys, a snapshot after every batch: %,d batches, then the old snapshot, then "
                        + "%,d batches more; data region %d MiB; %,d random gets as of the old snapshot in two passes", scale.keys(),
                SnapshotCostLoad.VALUE_BYTES, SnapshotCostLoad.BATCH, scale.batchesBefore(), 2L * scale.batchesBefore(),
                scale.regionBytes() >> 20, scale.gets());
        out.println("chain cost: snapshotDiffChain " + Arrays.toString(BOUNDS) + ", each row on a fresh store; " + load);
        out.println("machine: " + machine.oneLine());
        List<Row> rows = new ArrayList<>();
        for (int round = 0; round <= scale.rounds(); round++) { // round 0 runs every path for the compiler, untimed
            for (int bound : BOUNDS) {
                Row r = measure(bound, round);
                if (round > 0) rows.add(r);
                out.printf("  round %d%s, chain %2d: %,8.0f batches/s  %5.2f B/B  first pass p50 / p99 %s us%n", round, round == 0 ? " (untimed)" : "",
                        bound, r.batchesPerSecond(), r.bytesPerByteChanged(), r.old().firstCell());
            }
        }
        StoreDirs.delete(opts.dir);
        String table = table(rows);
        out.println();
        out.print(table);
        Path file = write(machine, load, table, (System.nanoTime() - t0) / 60e9);
        out.printf("%nreport: %s%n", file);
        return file;
    }

    private Row measure(int bound, int round) throws IOException, DemoJob.MismatchException {
        Path dir = opts.dir.resolve("chain-" + bound);
        Row row;
        try (Varve store = Varve.open(opts.config(dir).walSyncMode(WalSyncMode.LOG_ONLY).dataRegionSize(scale.regionBytes())
                .snapshotDiffChain(bound).build())) {
            SnapshotCostLoad load = SnapshotCostLoad.preload(store, SnapshotCadence.EVERY_BATCH, scale.keys(), SEED);
            store.checkpoint().join();
            runBatches(load, scale.batchesBefore());
            load.markNextDeclaration();
            long archive0 = SnapshotCostJob.archiveWritten(store.metrics());
            long batches0 = load.batches();
            long nanos = runBatches(load, 2L * scale.batchesBefore());
            long archive = SnapshotCostJob.archiveWritten(store.metrics()) - archive0;
            store.checkpoint().join(); // the captures archived and the pages written: the gets have the cores
            long[] atOld = load.markedTokens();
            GetLatency gets = new GetLatency(scale.gets(), load.keys(), SEED + 1);
            try (SnapshotView view = store.asOf(load.markedId())) {
                GetLatency.Micros old = gets.time(view.table(SnapshotCostLoad.TABLE), (v, k) -> load.matches(v, k, atOld[k]), "as of snapshot " + load.markedId());
                row = new Row(bound, round, load.batches() - batches0, nanos, archive, old);
            }
        }
        StoreDirs.delete(dir);
        return row;
    }

    /** Steps the load for {@code batches} batches; returns the nanoseconds they took. */
    private static long runBatches(SnapshotCostLoad load, long batches) {
        long start = System.nanoTime();
        for (long end = load.batches() + batches; load.batches() < end; ) load.step(System.nanoTime());
        return System.nanoTime() - start;
    }

    /** One line per bound over the timed rounds: medians, the first pass's p99 as its range, and that over whole pages' in each round. */
    static String table(List<Row> rows) {
        TextTable t = new TextTable("snapshotDiffChain", List.of("rounds", "batches/s", "archive/changed", "first pass p50 us", "first pass p99 us",
                "p99 vs whole pages", "second pass p50 / p99 us"));
        for (int bound : BOUNDS) {
            List<Row> of = rows.stream().filter(r -> r.bound() == bound).toList();
            if (of.isEmpty()) continue;
            double[] ratios = of.stream().mapToDouble(r -> r.old().firstP99() / wholePagesP99(rows, r.round())).toArray();
            double[] p99s = of.stream().mapToDouble(r -> r.old().firstP99()).toArray();
            t.row(bound == 0 ? "0 (whole pages)" : bound == ConfigLimits.SNAPSHOT_DIFF_CHAIN_DEFAULT ? bound + " (default)" : String.valueOf(bound),
                    List.of(String.valueOf(of.size()), String.format("%,.0f", median(of, Row::batchesPerSecond)),
                            String.format("%.1f", median(of, Row::bytesPerByteChanged)), String.format("%.2f", median(of, r -> r.old().firstMedian())),
                            range(p99s, "%.1f"), range(ratios, "%.1fx"),
                            String.format("%.2f / %.1f", median(of, r -> r.old().median()), median(of, r -> r.old().p99()))));
        }
        ByteArrayOutputStream buf = new ByteArrayOutputStream();
        t.print(new PrintStream(buf, true, StandardCharsets.UTF_8));
        return buf.toString(StandardCharsets.UTF_8);
    }

    private static double wholePagesP99(List<Row> rows, int round) {
        return rows.stream().filter(r -> r.bound() == 0 && r.round() == round).mapToDouble(r -> r.old().firstP99()).findFirst().orElse(Double.NaN);
    }

    private static double median(List<Row> rows, ToDoubleFunction<Row> f) {
        return Medians.of(rows.stream().mapToDouble(f).toArray());
    }

    private static String range(double[] values, String format) {
        double lo = Arrays.stream(values).min().orElse(Double.NaN);
        double hi = Arrays.stream(values).max().orElse(Double.NaN);
        return String.format(format, lo) + "-" + String.format(format, hi);
    }

    private Path write(MachineInfo machine, String load, String table, double minutes) throws IOException {
        StringBuilder sb = new StringBuilder("# Varve chain cost: archive bytes against the first read of old history, per snapshotDiffChain\n\n");
        sb.append("Generated by `java -jar benchmarks/target/varve-benchmarks.jar --chain-cost` on ")
                .append(ZonedDateTime.now().format(DateTimeFormatter.ofPattern("yyyy-MM-dd HH:mm z")))
                .append(String.format(Locale.ROOT, " in %.1f minutes; every row ran in that one invocation, on a fresh store, after an "
                        + "untimed round of every bound.%n%n", minutes));
        sb.append("- Machine: ").append(machine.oneLine()).append("; load average at the end ").append(MachineInfo.currentLoadAverage()).append(".\n");
        sb.append("- Load: ").append(load).append(".\n\n");
        sb.append("```\n").append(table).append("```\n\n");
        sb.append("- Every row archives the same history: its batches are counted, not timed, so the old snapshot (declared after the first ")
                .append(String.format("%,d", scale.batchesBefore())).append(" batches) lies at the same place in every page's chain.\n");
        sb.append("- Archive/changed: growth of archiveBytes() + archiveBytesReclaimed() over the batches after the old snapshot, over the bytes ")
                .append("their puts changed (").append(SnapshotCostLoad.CHANGED_BYTES_PER_PUT).append(" per put).\n");
        sb.append("- First pass: the first of two passes of random gets as of the old snapshot, which rebuilds every diff-based page it ")
                .append("reaches (at most 7 links plus one per 8, as every 8th version is a skip link; each link a record read ")
                .append("before Java 22 unless the Pagelog read the record lately, a copy from the segment's mapping since); ")
                .append("medians over the rounds, the p99 as ")
                .append("the range of the rounds and against the whole-page row of the same round. Second pass: the same gets again, ")
                .append("served by what the first pass kept. Every value of both passes is checked against what the key held then.\n");
        Files.createDirectories(opts.out);
        Path file = opts.out.resolve(FILE);
        Files.writeString(file, sb.toString(), StandardCharsets.UTF_8);
        return file.toAbsolutePath();
    }
}
