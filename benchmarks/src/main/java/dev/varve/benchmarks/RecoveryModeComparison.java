package dev.varve.benchmarks;

import dev.varve.config.VarveConfig;
import dev.varve.engine.Table;
import dev.varve.engine.Varve;
import dev.varve.engine.VarveMetrics;

import java.io.IOException;
import java.io.PrintStream;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.function.Function;

/**
 * {@code --recovery-modes}: the {@link UniquePutLoad} for {@code --seconds} in each {@link RecoverySetup}, one after
 * another in this JVM (each on a fresh store, after an untimed warm-up run of every configuration so the JIT does not
 * favour the later ones), with a checkpoint every {@value #CHECKPOINT_MILLIS} ms; then one side-by-side table. Figures cover the timed
 * run only: the store is measured before its closing checkpoint.
 */
final class RecoveryModeComparison {
    static final long CHECKPOINT_MILLIS = 1000;
    static final String TABLE = "load";

    /** What one configuration did in its run. */
    record Run(RecoverySetup setup, long puts, long nanos, long valueBytes, long walBytes, long recoveryFileBytes,
               long checkpointsCompleted, long checkpointPages, long throttledNanos, CheckpointTally.Totals checkpoints) {
        double putsPerSecond() {
            return puts / (nanos / 1e9);
        }
    }

    private final Options opts;
    private final PrintStream out;

    RecoveryModeComparison(Options opts, PrintStream out) {
        this.opts = opts;
        this.out = out;
    }

    void run() throws IOException {
        StoreDirs.wipe(opts.dir);
        out.printf("recovery modes: unique-key puts, %d..%d-byte values, 1 thread, %s, checkpoint every %d ms, %d s per configuration%n",
                UniquePutLoad.MIN_VALUE_BYTES, UniquePutLoad.MAX_VALUE_BYTES, opts.sync, CHECKPOINT_MILLIS, opts.seconds);
        int warmup = Math.max(1, Math.min(5, opts.seconds / 4));
        // every configuration, not one: each has paths of its own (WAL_PHYSICAL's page images above all), which would
        // otherwise compile while that configuration is timed
        out.printf("warm-up (not reported): %s, %d s each%n",
                String.join(", ", java.util.Arrays.stream(RecoverySetup.values()).map(RecoverySetup::label).toList()), warmup);
        for (RecoverySetup s : RecoverySetup.values()) measure(s, warmup);
        List<Run> runs = new ArrayList<>();
        for (RecoverySetup s : RecoverySetup.values()) {
            Run r = measure(s, opts.seconds);
            out.printf("  %-28s %,12.0f puts/s  %,d checkpoints%n", s, r.putsPerSecond(), r.checkpointsCompleted());
            runs.add(r);
        }
        out.println();
        print(runs);
        StoreDirs.delete(opts.dir);
    }

    private Run measure(RecoverySetup setup, int seconds) throws IOException {
        java.nio.file.Path dir = opts.dir.resolve(setup.name());
        VarveConfig cfg = setup.applyTo(opts.config(dir)).checkpointFrequency(Duration.ofMillis(CHECKPOINT_MILLIS)).build();
        Run r;
        try (Varve store = Varve.open(cfg)) {
            Table table = store.table(TABLE);
            VarveMetrics m = store.metrics();
            UniquePutLoad load = new UniquePutLoad(0, 42);
            try (CheckpointTally tally = new CheckpointTally(m)) {
                long wal0 = m.walBytesWritten();
                long rf0 = m.recoveryFileBytesWritten();
                long cp0 = m.checkpointsCompleted();
                long pages0 = m.checkpointPagesWritten();
                long throttled0 = m.throttledNanos();
                long start = System.nanoTime();
                long end = start + seconds * 1_000_000_000L;
                long now;
                do {
                    for (int i = 0; i < 256; i++) load.putNext(table);
                } while ((now = System.nanoTime()) < end);
                r = new Run(setup, load.nextId(), now - start, load.valueBytes(), m.walBytesWritten() - wal0,
                        m.recoveryFileBytesWritten() - rf0, m.checkpointsCompleted() - cp0, m.checkpointPagesWritten() - pages0,
                        m.throttledNanos() - throttled0, tally.totals());
            }
        }
        StoreDirs.delete(dir);
        return r;
    }

    private void print(List<Run> runs) {
        Run base = runs.get(0);
        TextTable t = new TextTable("", runs.stream().map(r -> r.setup().label()).toList());
        t.row("puts/s", cells(runs, r -> String.format("%,.0f", r.putsPerSecond())));
        t.row("puts", cells(runs, r -> String.format("%,d", r.puts())));
        t.row("WAL bytes", cells(runs, r -> mib(r.walBytes())));
        t.row("WAL bytes per put", cells(runs, r -> String.format("%,.1f", (double) r.walBytes() / r.puts())));
        t.row("recovery-file bytes", cells(runs, r -> mib(r.recoveryFileBytes())));
        t.row("WAL + recovery-file per put", cells(runs, r -> String.format("%,.1f", (double) (r.walBytes() + r.recoveryFileBytes()) / r.puts())));
        t.row("checkpoints", cells(runs, r -> Long.toString(r.checkpointsCompleted())));
        t.row("checkpoint pages", cells(runs, r -> String.format("%,d", r.checkpointPages())));
        t.row("avg checkpoint total ms", cells(runs, r -> avg(r, r.checkpoints().totalNanos())));
        t.row("avg recovery-data ms", cells(runs, r -> avg(r, r.checkpoints().recoveryDataNanos())));
        t.row("avg page-write ms", cells(runs, r -> avg(r, r.checkpoints().pageWriteNanos())));
        t.row("avg fsync ms", cells(runs, r -> avg(r, r.checkpoints().fsyncNanos())));
        t.row("avg lock hold ms", cells(runs, r -> String.format("%.3f", r.checkpoints().avgMillis(r.checkpoints().lockHoldNanos()))));
        t.row("throttled ms", cells(runs, r -> String.format("%,d", r.throttledNanos() / 1_000_000)));
        t.row("-- vs " + base.setup().label() + ":", cells(runs, r -> ""));
        t.row("throughput", cells(runs, r -> ratio(r.putsPerSecond(), base.putsPerSecond())));
        t.row("WAL bytes per put", cells(runs, r -> ratio((double) r.walBytes() / r.puts(), (double) base.walBytes() / base.puts())));
        t.row("WAL + recovery-file per put", cells(runs, r -> ratio((double) (r.walBytes() + r.recoveryFileBytes()) / r.puts(),
                (double) (base.walBytes() + base.recoveryFileBytes()) / base.puts())));
        t.row("avg checkpoint total", cells(runs, r -> ratio(r.checkpoints().avgMillis(r.checkpoints().totalNanos()),
                base.checkpoints().avgMillis(base.checkpoints().totalNanos()))));
        t.print(out);
        long missed = runs.stream().mapToLong(r -> r.checkpoints().missed()).sum();
        out.printf("(averages over the checkpoints sampled; values %d..%d bytes, %s)%n", UniquePutLoad.MIN_VALUE_BYTES,
                UniquePutLoad.MAX_VALUE_BYTES, missed == 0 ? "no checkpoint missed by the sampler" : missed + " checkpoints missed by the sampler");
    }

    private static List<String> cells(List<Run> runs, Function<Run, String> f) {
        return runs.stream().map(f).toList();
    }

    private static String avg(Run r, long nanos) {
        return String.format("%,.1f", r.checkpoints().avgMillis(nanos));
    }

    private static String mib(long bytes) {
        return String.format("%,.1f MiB", bytes / 1048576.0);
    }

    private static String ratio(double v, double base) {
        return base == 0 ? "-" : String.format("%.2fx", v / base);
    }
}
