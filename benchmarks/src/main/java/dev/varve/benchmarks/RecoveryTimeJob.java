package dev.varve.benchmarks;

import dev.varve.config.RecoveryCompression;
import dev.varve.config.RecoveryMode;
import dev.varve.config.VarveConfig;
import dev.varve.config.WalSyncMode;
import dev.varve.engine.Varve;

import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStreamReader;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;
import java.util.function.Consumer;

/**
 * {@code --recovery-time}: for each recovery mode, a child JVM ({@link DirtyPageWriter}) writes until
 * {@code --dirty-mib} MiB of pages are dirty and keeps writing; it is killed ({@link Process#destroyForcibly()},
 * SIGKILL on Linux) and a fresh child JVM ({@link RecoveryChild}) times {@link Varve#open} — the crash recovery —
 * then checks a sample of the acknowledged puts and closes the store. Open leaves the checkpoint of the replayed pages
 * to the background: the job also times open up to the end of that checkpoint.
 */
final class RecoveryTimeJob {
    static final int VERIFY_SAMPLE = RecoveryChild.VERIFY_SAMPLE;
    static final long READY_TIMEOUT_SECONDS = 900;
    /** The writer's heap: its pages are off the heap, and a small heap keeps the machine's memory for them. */
    private static final String WRITER_HEAP = "256m";
    /**
     * Extra JVM arguments for the recovering child, separated by spaces, {@code {mode}} standing for the recovery
     * mode; for profiling recovery, e.g. {@code -Dvarve.bench.recoveryJvmArgs=-XX:StartFlightRecording=filename=/tmp/{mode}.jfr}.
     */
    static final String RECOVERY_JVM_ARGS = "varve.bench.recoveryJvmArgs";
    static final String PHYSICAL_ROW = "physical records in the WAL's first " + String.format("%,d", WalCensus.RECORDS);

    /** One mode's figures. */
    record Result(String label, long ackedPuts, long dirtyBytes, long walBytesWritten, long storeBytesAtKill,
                  RecoveryChild.Recovered recovered) {
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
        t.row(PHYSICAL_ROW, results.stream().map(r -> String.format("%,d", r.recovered().physicalRecords())).toList());
        t.row("Varve.open (recovery) ms", results.stream().map(r -> String.format("%,.0f", r.recovered().openNanos() / 1e6)).toList());
        t.row("open + checkpoint of the replayed pages ms", results.stream().map(r -> String.format("%,.0f", r.recovered().durableNanos() / 1e6)).toList());
        t.row("binary restore from", results.stream().map(r -> r.recovered().restoredFrom()).toList());
        t.row("pages restored", results.stream().map(r -> String.format("%,d", r.recovered().restoredPages())).toList());
        t.row("logical records replayed", results.stream().map(r -> String.format("%,d", r.recovered().replayedRecords())).toList());
        t.row("WAL tail cut", results.stream().map(r -> r.recovered().walTailCut() ? "yes" : "no").toList());
        t.row("sampled puts missing", results.stream().map(r -> r.recovered().missing() + " of " + VERIFY_SAMPLE).toList());
        t.row("close (checkpoint) ms", results.stream().map(r -> String.format("%,.0f", r.recovered().closeNanos() / 1e6)).toList());
        t.print(out);
        StoreDirs.delete(opts.dir);
    }

    private Result measure(RecoveryMode mode, RecoveryCompression compression, String label)
            throws IOException, InterruptedException, FailedException {
        Path dir = opts.dir.resolve(label.replace('/', '_'));
        VarveConfig cfg = DirtyPageWriter.config(dir, mode, compression, opts.sync, opts.dirtyMiB);
        out.printf("%s: child writing ...%n", label);
        long[] ready = runWriterUntilKilled(cfg);
        long storeBytes = StoreDirs.size(dir);
        out.printf("%s: recovering in a fresh JVM ...%n", label);
        // the physical records are counted from the child's WAL, not its configuration: the column shows the mode the
        // child ran, which the label names
        RecoveryChild.Recovered r = recoverInChild(cfg, ready[0], opts.dir.resolve(dir.getFileName() + "-census"));
        if (r.missing() > 0 && opts.sync != WalSyncMode.BACKGROUND)
            throw new FailedException(label + ": " + r.missing() + " of " + VERIFY_SAMPLE + " sampled acknowledged puts are missing or wrong after recovery");
        StoreDirs.delete(dir);
        return new Result(label, ready[0], ready[1], ready[2], storeBytes, r);
    }

    /** Starts the writer, waits for READY, kills it; returns READY's figures: acknowledged puts, dirty bytes, WAL bytes. */
    private long[] runWriterUntilKilled(VarveConfig cfg) throws IOException, InterruptedException, FailedException {
        Process child = launch(cfg, WRITER_HEAP, List.of(), DirtyPageWriter.class, Integer.toString(opts.dirtyMiB));
        try {
            long[] ready = new long[3];
            awaitLine(child, DirtyPageWriter.READY, line -> {
                String[] f = line.split(" ");
                for (int i = 0; i < 3; i++) ready[i] = Long.parseLong(f[i + 1]);
            });
            child.destroyForcibly();
            if (!child.waitFor(60, TimeUnit.SECONDS)) throw new FailedException("child " + child.pid() + " did not die within 60 s of SIGKILL");
            out.printf("  child killed after READY: %,d puts acknowledged, %,d MiB dirty%n", ready[0], ready[1] >> 20);
            return ready;
        } finally {
            if (child.isAlive()) child.destroyForcibly().waitFor(60, TimeUnit.SECONDS);
        }
    }

    /** Runs {@link RecoveryChild} on the killed writer's store and waits for its figures and its exit. */
    private RecoveryChild.Recovered recoverInChild(VarveConfig cfg, long acked, Path censusDir)
            throws IOException, InterruptedException, FailedException {
        Process child = launch(cfg, null, ChildJvmArgs.fromProperty(RECOVERY_JVM_ARGS, "{mode}", cfg.recoveryMode().name()), RecoveryChild.class, Integer.toString(opts.dirtyMiB), Long.toString(acked), censusDir.toString());
        try {
            RecoveryChild.Recovered[] recovered = new RecoveryChild.Recovered[1];
            awaitLine(child, RecoveryChild.RESULT, line -> recovered[0] = RecoveryChild.Recovered.parse(line));
            if (!child.waitFor(60, TimeUnit.SECONDS)) throw new FailedException("recovering child " + child.pid() + " did not exit within 60 s of its figures");
            if (child.exitValue() != 0) throw new FailedException("recovering child exited with code " + child.exitValue() + " (its stderr is above)");
            return recovered[0];
        } finally {
            if (child.isAlive()) child.destroyForcibly().waitFor(60, TimeUnit.SECONDS);
        }
    }

    /**
     * Starts {@code main} in a JVM of its own on the store of {@code cfg}, with a maximum heap of {@code maxHeap} (a
     * {@code -Xmx} value; null: the JVM's default, as an operator's recovering process has — replay of millions of
     * records under a small heap spends seconds collecting) and {@code jvmArgs} besides; the arguments follow the store's
     * settings.
     */
    private Process launch(VarveConfig cfg, String maxHeap, List<String> jvmArgs, Class<?> main, String... args) throws IOException {
        String java = Path.of(System.getProperty("java.home"), "bin", "java").toString();
        long directBytes = cfg.dataRegionSize() + cfg.checkpointBufferSize() + (256L << 20);
        List<String> cmd = new ArrayList<>(List.of(java, "-XX:MaxDirectMemorySize=" + directBytes,
                "-Dorg.slf4j.simpleLogger.defaultLogLevel=" + (opts.verbose ? "info" : "warn"),
                // snappy-java unpacks its native library per JVM and deletes it at exit, which a killed JVM never
                // reaches: keep the copies in our directory, which this job deletes, rather than in /tmp
                "-Dorg.xerial.snappy.tempdir=" + opts.dir.toAbsolutePath(),
                "-cp", System.getProperty("java.class.path"), main.getName(),
                cfg.path().toString(), cfg.recoveryMode().name(), cfg.recoveryCompression().name(), cfg.walSyncMode().name()));
        cmd.addAll(List.of(args));
        if (maxHeap != null) cmd.add(1, "-Xmx" + maxHeap);
        cmd.addAll(1, jvmArgs);
        if (Runtime.version().feature() >= 22) cmd.add(1, "--enable-native-access=ALL-UNNAMED"); // snappy-java's native library
        return new ProcessBuilder(cmd).redirectError(ProcessBuilder.Redirect.INHERIT).start();
    }

    /**
     * Waits until the child prints a line starting with {@code tag} and hands it to {@code onLine}; relays the lines
     * before it to {@link #out}. The reader stops at that line or at the end of the child's output, so joining it
     * also covers a child that prints the line and exits at once.
     */
    private void awaitLine(Process child, String tag, Consumer<String> onLine) throws InterruptedException, FailedException {
        String[] found = new String[1];
        Thread reader = new Thread(() -> {
            try (BufferedReader r = new BufferedReader(new InputStreamReader(child.getInputStream(), StandardCharsets.UTF_8))) {
                for (String line; (line = r.readLine()) != null; ) {
                    if (line.startsWith(tag + " ")) {
                        found[0] = line;
                        return;
                    }
                    out.println(line);
                }
            } catch (IOException e) {
                // the child is gone; the waiter reports it
            }
        }, "child-stdout");
        reader.setDaemon(true);
        reader.start();
        reader.join(TimeUnit.SECONDS.toMillis(READY_TIMEOUT_SECONDS));
        if (reader.isAlive()) throw new FailedException("child printed no " + tag + " line within " + READY_TIMEOUT_SECONDS + " s");
        if (found[0] == null) {
            child.waitFor(60, TimeUnit.SECONDS);
            throw new FailedException("child exited" + (child.isAlive() ? "" : " with code " + child.exitValue()) + " before " + tag + " (its stderr is above)");
        }
        onLine.accept(found[0]);
    }
}
