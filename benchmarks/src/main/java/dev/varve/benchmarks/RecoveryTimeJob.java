package dev.varve.benchmarks;

import dev.varve.config.RecoveryCompression;
import dev.varve.config.RecoveryMode;
import dev.varve.config.VarveConfig;
import dev.varve.config.WalSyncMode;
import dev.varve.engine.Table;
import dev.varve.engine.Varve;
import dev.varve.engine.RecoveryReport;

import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStreamReader;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.SplittableRandom;
import java.util.concurrent.TimeUnit;

/**
 * {@code --recovery-time}: for each recovery mode, a child JVM ({@link DirtyPageWriter}) writes until
 * {@code --dirty-mib} MiB of pages are dirty and keeps writing; it is killed ({@link Process#destroyForcibly()},
 * SIGKILL on Linux) and this JVM times {@link Varve#open} — the crash recovery — then checks a sample of the
 * acknowledged puts and closes the store. Open leaves the checkpoint of the replayed pages to the background: the
 * job also times open up to the end of that checkpoint.
 */
final class RecoveryTimeJob {
    static final int VERIFY_SAMPLE = 10_000;
    static final long READY_TIMEOUT_SECONDS = 900;
    static final String PHYSICAL_ROW = "physical records in the WAL's first " + String.format("%,d", WalCensus.RECORDS);

    /** One mode's figures. */
    record Result(String label, long ackedPuts, long dirtyBytes, long walBytesWritten, long storeBytesAtKill, long physicalRecords,
                  long openNanos, long durableNanos, RecoveryReport report, long missing, long closeNanos) {
    }

    /** The child died or hung before it was ready, or recovery lost an acknowledged write. */
    static final class FailedException extends Exception {
        private static final long serialVersionUID = 1L;

        FailedException(String message) {
            super(message);
        }
    }

    private final Options opts;
    private final PrintStream out;

    RecoveryTimeJob(Options opts, PrintStream out) {
        this.opts = opts;
        this.out = out;
    }

    void run() throws IOException, InterruptedException, FailedException {
        StoreDirs.wipe(opts.dir);
        out.printf("recovery time: kill -9 with %,d MiB of dirty pages (region %,d MiB, no checkpoint since open), %s%n",
                opts.dirtyMiB, DirtyPageWriter.regionBytes(opts.dirtyMiB) >> 20, opts.sync);
        List<Result> results = new ArrayList<>();
        // WAL_PHYSICAL's page images follow recoveryCompression too (since 896eb2c): both modes run the one --compression
        results.add(measure(RecoveryMode.WAL_PHYSICAL, opts.compression, "WAL_PHYSICAL/" + opts.compression));
        results.add(measure(RecoveryMode.CHECKPOINT_RECOVERY_FILE, opts.compression, "RF/" + opts.compression));
        out.println();
        TextTable t = new TextTable("", results.stream().map(Result::label).toList());
        t.row("acknowledged puts at READY (kill after)", results.stream().map(r -> String.format("%,d", r.ackedPuts())).toList());
        t.row("dirty pages at READY", results.stream().map(r -> String.format("%,.0f MiB", r.dirtyBytes() / 1048576.0)).toList());
        t.row("WAL written at READY", results.stream().map(r -> String.format("%,.0f MiB", r.walBytesWritten() / 1048576.0)).toList());
        t.row("store on disk at kill", results.stream().map(r -> String.format("%,.0f MiB", r.storeBytesAtKill() / 1048576.0)).toList());
        t.row(PHYSICAL_ROW, results.stream().map(r -> String.format("%,d", r.physicalRecords())).toList());
        t.row("Varve.open (recovery) ms", results.stream().map(r -> String.format("%,.0f", r.openNanos() / 1e6)).toList());
        t.row("open + checkpoint of the replayed pages ms", results.stream().map(r -> String.format("%,.0f", r.durableNanos() / 1e6)).toList());
        t.row("binary restore from", results.stream().map(r -> r.report().restoredFrom()).toList());
        t.row("pages restored", results.stream().map(r -> String.format("%,d", r.report().restoredPages())).toList());
        t.row("logical records replayed", results.stream().map(r -> String.format("%,d", r.report().replayedRecords())).toList());
        t.row("WAL tail cut", results.stream().map(r -> r.report().walTailCut() == null ? "no" : "yes").toList());
        t.row("sampled puts missing", results.stream().map(r -> r.missing() + " of " + VERIFY_SAMPLE).toList());
        t.row("close (checkpoint) ms", results.stream().map(r -> String.format("%,.0f", r.closeNanos() / 1e6)).toList());
        t.print(out);
        StoreDirs.delete(opts.dir);
    }

    @SuppressWarnings("try") // the store is closed inside its try, to time the closing checkpoint
    private Result measure(RecoveryMode mode, RecoveryCompression compression, String label)
            throws IOException, InterruptedException, FailedException {
        Path dir = opts.dir.resolve(label.replace('/', '_'));
        VarveConfig cfg = DirtyPageWriter.config(dir, mode, compression, opts.sync, opts.dirtyMiB);
        out.printf("%s: child writing ...%n", label);
        long[] ready = runChildUntilKilled(cfg);
        long storeBytes = StoreDirs.size(dir);
        // counted from the child's WAL, not its configuration: the column shows the mode the child ran, which the label
        // names; kept aside now and counted once the store is closed, so the timed open runs the WAL's scan code cold
        try (WalCensus census = WalCensus.keep(cfg, opts.dir.resolve(dir.getFileName() + "-census"))) {
            long t0 = System.nanoTime();
            long openNanos;
            long durableNanos;
            long closeNanos;
            long missing;
            RecoveryReport report;
            try (Varve store = Varve.open(cfg)) {
                openNanos = System.nanoTime() - t0;
                report = store.recoveryReport();
                out.printf("%s: open took %,.0f ms; %s%n", label, openNanos / 1e6, report);
                store.checkpoint().join(); // starts after the one open left to the background, which writes what replay changed
                durableNanos = System.nanoTime() - t0;
                missing = missingOfSample(store.table(DirtyPageWriter.TABLE), ready[0]);
                if (missing > 0 && opts.sync != WalSyncMode.BACKGROUND)
                    throw new FailedException(label + ": " + missing + " of " + VERIFY_SAMPLE + " sampled acknowledged puts are missing or wrong after recovery");
                long t1 = System.nanoTime();
                store.close();
                closeNanos = System.nanoTime() - t1;
            }
            long physical = census.physicalRecords();
            StoreDirs.delete(dir);
            return new Result(label, ready[0], ready[1], ready[2], storeBytes, physical, openNanos, durableNanos, report, missing, closeNanos);
        }
    }

    /** Starts the child, waits for READY, kills it; returns READY's figures: acknowledged puts, dirty bytes, WAL bytes. */
    private long[] runChildUntilKilled(VarveConfig cfg) throws IOException, InterruptedException, FailedException {
        String java = Path.of(System.getProperty("java.home"), "bin", "java").toString();
        long directBytes = cfg.dataRegionSize() + cfg.checkpointBufferSize() + (256L << 20);
        List<String> cmd = new ArrayList<>(List.of(java, "-Xmx256m", "-XX:MaxDirectMemorySize=" + directBytes,
                "-Dorg.slf4j.simpleLogger.defaultLogLevel=" + (opts.verbose ? "info" : "warn"),
                // snappy-java unpacks its native library per JVM and deletes it at exit, which a killed JVM never
                // reaches: keep the copies in our directory, which this job deletes, rather than in /tmp
                "-Dorg.xerial.snappy.tempdir=" + opts.dir.toAbsolutePath(),
                "-cp", System.getProperty("java.class.path"), DirtyPageWriter.class.getName(),
                cfg.path().toString(), cfg.recoveryMode().name(), cfg.recoveryCompression().name(), cfg.walSyncMode().name(),
                Integer.toString(opts.dirtyMiB)));
        if (Runtime.version().feature() >= 22) cmd.add(1, "--enable-native-access=ALL-UNNAMED"); // snappy-java's native library
        Process child = new ProcessBuilder(cmd).redirectError(ProcessBuilder.Redirect.INHERIT).start();
        try {
            long[] ready = awaitReady(child);
            child.destroyForcibly();
            if (!child.waitFor(60, TimeUnit.SECONDS)) throw new FailedException("child " + child.pid() + " did not die within 60 s of SIGKILL");
            out.printf("  child killed after READY: %,d puts acknowledged, %,d MiB dirty%n", ready[0], ready[1] >> 20);
            return ready;
        } finally {
            if (child.isAlive()) child.destroyForcibly().waitFor(60, TimeUnit.SECONDS);
        }
    }

    private static long[] awaitReady(Process child) throws IOException, InterruptedException, FailedException {
        long[] ready = new long[3];
        boolean[] seen = new boolean[1];
        Thread reader = new Thread(() -> {
            try (BufferedReader r = new BufferedReader(new InputStreamReader(child.getInputStream(), StandardCharsets.UTF_8))) {
                for (String line; (line = r.readLine()) != null; ) {
                    if (line.startsWith(DirtyPageWriter.READY + " ")) {
                        String[] f = line.split(" ");
                        for (int i = 0; i < 3; i++) ready[i] = Long.parseLong(f[i + 1]);
                        synchronized (seen) {
                            seen[0] = true;
                            seen.notifyAll();
                        }
                        return;
                    }
                }
            } catch (IOException e) {
                // the child is gone; the waiter reports it
            }
        }, "child-stdout");
        reader.setDaemon(true);
        reader.start();
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(READY_TIMEOUT_SECONDS);
        synchronized (seen) {
            while (!seen[0]) {
                if (!child.isAlive()) throw new FailedException("child exited with code " + child.exitValue() + " before READY (its stderr is above)");
                long left = deadline - System.nanoTime();
                if (left <= 0) throw new FailedException("child not READY after " + READY_TIMEOUT_SECONDS + " s");
                seen.wait(Math.min(TimeUnit.NANOSECONDS.toMillis(left) + 1, 200));
            }
        }
        return ready;
    }

    /** Reads back the last acknowledged put and a random sample of the others; counts those missing or wrong. */
    private static long missingOfSample(Table table, long acked) {
        UniquePutLoad expected = new UniquePutLoad(0, DirtyPageWriter.SEED);
        SplittableRandom rnd = new SplittableRandom(acked);
        long missing = 0;
        for (int i = 0; i < VERIFY_SAMPLE; i++) {
            long id = i == 0 ? acked - 1 : rnd.nextLong(acked);
            if (!java.util.Arrays.equals(table.get(Keys.of(id)), expected.valueOf(id))) missing++;
        }
        return missing;
    }
}
