package dev.varve.benchmarks;

import dev.varve.config.WalSyncMode;

import java.io.IOException;
import java.io.PrintStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.concurrent.TimeUnit;

/**
 * {@code --compare}: the comparison harness. For each sync mode and each {@link CompareSetup} (four Varve recovery
 * configurations, Ignite with physical WAL records, Ignite with checkpoint recovery data, H2 MVStore, RocksDB) it starts a
 * child JVM ({@link CompareChild}) with the same heap, direct-memory limit and flags, which runs the same phases on
 * fresh stores; then writes {@code BENCHMARKS.md} and SVG charts into {@code --out} and prints the table.
 */
final class CompareJob {
    static final String HEAP = "1g";
    static final String MAX_DIRECT = "1g";

    /** The JDK 17+ module flags Apache Ignite 2.x needs (its docs' list); every child gets them, for equal footing. */
    static final List<String> MODULE_FLAGS = List.of(
            "--add-opens=java.base/jdk.internal.access=ALL-UNNAMED",
            "--add-opens=java.base/jdk.internal.loader=ALL-UNNAMED",
            "--add-opens=java.base/jdk.internal.misc=ALL-UNNAMED",
            "--add-opens=java.base/sun.net.util=ALL-UNNAMED",
            "--add-opens=java.base/sun.nio.ch=ALL-UNNAMED",
            "--add-opens=java.base/sun.nio.fs=ALL-UNNAMED",
            "--add-opens=java.base/sun.util.calendar=ALL-UNNAMED",
            "--add-opens=java.management/com.sun.jmx.mbeanserver=ALL-UNNAMED",
            "--add-opens=jdk.internal.jvmstat/sun.jvmstat.monitor=ALL-UNNAMED",
            "--add-opens=java.base/sun.reflect.generics.reflectiveObjects=ALL-UNNAMED",
            "--add-opens=jdk.management/com.sun.management.internal=ALL-UNNAMED",
            "--add-opens=java.base/java.io=ALL-UNNAMED",
            "--add-opens=java.base/java.nio=ALL-UNNAMED",
            "--add-opens=java.base/java.net=ALL-UNNAMED",
            "--add-opens=java.base/java.util=ALL-UNNAMED",
            "--add-opens=java.base/java.util.concurrent=ALL-UNNAMED",
            "--add-opens=java.base/java.util.concurrent.locks=ALL-UNNAMED",
            "--add-opens=java.base/java.util.concurrent.atomic=ALL-UNNAMED",
            "--add-opens=java.base/java.lang=ALL-UNNAMED",
            "--add-opens=java.base/java.lang.invoke=ALL-UNNAMED",
            "--add-opens=java.base/java.lang.reflect=ALL-UNNAMED",
            "--add-opens=java.base/java.math=ALL-UNNAMED",
            "--add-opens=java.base/java.time=ALL-UNNAMED",
            "--add-opens=java.base/java.text=ALL-UNNAMED",
            "--add-opens=java.sql/java.sql=ALL-UNNAMED",
            "--add-opens=java.management/sun.management=ALL-UNNAMED");

    /** Some phase of a run failed (a child JVM that died or timed out, a system that threw); the report was still written. */
    static final class PhasesFailedException extends Exception {
        private static final long serialVersionUID = 1L;

        PhasesFailedException(String message) {
            super(message);
        }
    }

    private final Options opts;
    private final PrintStream out;

    CompareJob(Options opts, PrintStream out) {
        this.opts = opts;
        this.out = out;
    }

    /** The settings the flags describe: the default run, or {@code --long}. */
    CompareSettings settings(WalSyncMode sync) {
        return new CompareSettings(opts.compareSeconds(), opts.compareWarmupSeconds(), opts.compareKeys(), opts.rate, opts.batchSize, opts.threads,
                256L << 20, 64L << 20, opts.checkpointMillis, 4096, 16, sync);
    }

    List<WalSyncMode> syncModes() {
        if (opts.syncSet) return List.of(opts.sync);
        return opts.longRun ? List.of(WalSyncMode.LOG_ONLY, WalSyncMode.FSYNC) : List.of(WalSyncMode.LOG_ONLY);
    }

    List<ComparePhase> phases() {
        if (opts.phases != null) return opts.phases;
        return opts.longRun ? List.of(ComparePhase.values()) : List.of(ComparePhase.DEFAULT);
    }

    List<CompareSetup> setups() {
        return opts.systems != null ? opts.systems : List.of(CompareSetup.values());
    }

    /**
     * The flags after {@code --compare} that shaped this run, for the report's command line: each one given (a default
     * written out changes nothing, but is not left out either) — the phases, systems, durability and load it names are
     * the ones that ran.
     */
    String flags() {
        StringBuilder f = new StringBuilder();
        if (opts.longRun) f.append(" --long");
        if (opts.phases != null) f.append(" --phases ").append(String.join(",", opts.phases.stream().map(p -> p.name().toLowerCase(Locale.ROOT)).toList()));
        if (opts.systems != null) f.append(" --systems ").append(String.join(",", opts.systems.stream().map(x -> x.name().toLowerCase(Locale.ROOT)).toList()));
        if (opts.syncSet) f.append(" --sync ").append(opts.sync);
        if (opts.secondsSet) f.append(" --seconds ").append(opts.seconds);
        if (opts.keysSet) f.append(" --keys ").append(opts.keys);
        if (opts.threads != 1) f.append(" --threads ").append(opts.threads);
        if (opts.rate != Options.RATE_DEFAULT) f.append(" --rate ").append(opts.rate);
        if (opts.batchSize != Options.BATCH_DEFAULT) f.append(" --batch ").append(opts.batchSize);
        if (opts.checkpointMillis != Options.CHECKPOINT_MILLIS_DEFAULT) f.append(" --checkpoint-ms ").append(opts.checkpointMillis);
        if (opts.warmupSeconds >= 0) f.append(" --warmup-seconds ").append(opts.warmupSeconds);
        return f.toString();
    }

    static List<String> childJvmFlags() {
        List<String> f = new ArrayList<>(List.of("-Xms" + HEAP, "-Xmx" + HEAP, "-XX:MaxDirectMemorySize=" + MAX_DIRECT, "-XX:+UseG1GC",
                "-Djava.net.preferIPv4Stack=true",
                "-DIGNITE_QUIET=true", "-DIGNITE_UPDATE_NOTIFIER=false", "-DIGNITE_NO_ASCII=true",
                "-DIGNITE_PERFORMANCE_SUGGESTIONS_DISABLED=true", "-DIGNITE_NO_SHUTDOWN_HOOK=true",
                "-Dorg.slf4j.simpleLogger.defaultLogLevel=warn"));
        f.addAll(MODULE_FLAGS);
        int feature = Runtime.version().feature();
        if (feature >= 22) f.add("--enable-native-access=ALL-UNNAMED"); // snappy-java's native library
        if (feature >= 23) f.add("--sun-misc-unsafe-memory-access=allow"); // Ignite's GridUnsafe
        return f;
    }

    /**
     * Runs every configuration and writes the report, failed phases included (as "failed", with their errors).
     *
     * @throws PhasesFailedException after the report, when any phase failed: a run with a missing figure is no success
     */
    void run() throws IOException, InterruptedException, PhasesFailedException {
        long t0 = System.nanoTime();
        Path outDir = opts.out.toAbsolutePath();
        Files.createDirectories(outDir);
        Path logs = outDir.resolve("logs");
        Path data = outDir.resolve("data");
        StoreDirs.delete(logs);
        StoreDirs.delete(data);
        Files.createDirectories(logs);
        Files.createDirectories(data);
        StoreDirs.wipe(opts.dir);
        MachineInfo machine = MachineInfo.probe(opts.dir);
        List<ComparePhase> phases = phases();
        List<WalSyncMode> syncs = syncModes();
        CompareSettings base = settings(syncs.get(0));
        List<CompareSetup> setups = setups();
        out.printf("comparison: %s%s; %d phases x %d s (+%d s warm-up per JVM), %s, %d thread(s) unless a phase says, "
                        + "one child JVM per configuration (-Xmx%s)%n",
                String.join(", ", setups.stream().map(x -> x.label).toList()), opts.longRun ? " (long)" : "", phases.size(), base.seconds(),
                base.warmupSeconds(), syncs, base.threads(), HEAP);
        out.printf("machine: %s%n", machine.oneLine());
        Map<WalSyncMode, List<PhaseResult>> results = new LinkedHashMap<>();
        int total = syncs.size() * setups.size();
        int done = 0;
        for (WalSyncMode sync : syncs) {
            CompareSettings s = base.withSync(sync);
            List<PhaseResult> rs = new ArrayList<>();
            for (CompareSetup setup : setups) {
                done++;
                long c0 = System.nanoTime();
                List<PhaseResult> r = runChild(setup, s, phases, logs, data);
                rs.addAll(r);
                StringBuilder line = new StringBuilder(String.format("  [%d/%d] %-22s %-8s", done, total, setup.label, sync));
                for (PhaseResult p : r) {
                    line.append(p.error() != null ? "  " + p.phase().name().toLowerCase(Locale.ROOT) + " FAILED"
                            : String.format("  %s %,.0f/s", p.phase().name().toLowerCase(Locale.ROOT), p.putsPerSecond()));
                }
                line.append(String.format("  (%.0f s)", (System.nanoTime() - c0) / 1e9));
                out.println(line);
                for (PhaseResult p : r) if (p.error() != null) out.println("      " + p.phase() + ": " + p.error());
            }
            results.put(sync, rs);
        }
        StoreDirs.delete(opts.dir);
        double minutes = (System.nanoTime() - t0) / 60e9;
        CompareReport report = new CompareReport(base, phases, setups, results, machine, childJvmFlags(), flags(), minutes);
        Path md = report.write(outDir);
        out.println();
        report.printConsole(out);
        out.printf("%nreport: %s (charts and child logs beside it); %.1f minutes%n", md, minutes);
        long runs = results.values().stream().mapToLong(List::size).sum();
        long failed = results.values().stream().flatMap(List::stream).filter(r -> r.error() != null).count();
        if (failed > 0) throw new PhasesFailedException(failed + " of " + runs + " phase runs failed (see Failures in " + md.getFileName() + ")");
    }

    private List<PhaseResult> runChild(CompareSetup setup, CompareSettings s, List<ComparePhase> phases, Path logs, Path data)
            throws IOException, InterruptedException {
        String name = s.sync().name().toLowerCase(Locale.ROOT) + "-" + setup.name().toLowerCase(Locale.ROOT);
        Path result = data.resolve(name + ".txt");
        Path log = logs.resolve(name + ".log");
        Path work = opts.dir.resolve(name);
        String java = Path.of(System.getProperty("java.home"), "bin", "java").toString();
        List<String> cmd = new ArrayList<>();
        cmd.add(java);
        cmd.addAll(childJvmFlags());
        cmd.add("-Dorg.xerial.snappy.tempdir=" + opts.dir.toAbsolutePath());
        cmd.add("-cp");
        cmd.add(System.getProperty("java.class.path"));
        cmd.add(CompareChild.class.getName());
        cmd.add("setup=" + setup.name());
        cmd.add("workDir=" + work.toAbsolutePath());
        cmd.add("result=" + result.toAbsolutePath());
        cmd.add("phases=" + String.join(",", phases.stream().map(Enum::name).toList()));
        cmd.addAll(s.toArgs());
        Process p = new ProcessBuilder(cmd).redirectErrorStream(true).redirectOutput(log.toFile()).start();
        long timeout = (long) phases.size() * (s.seconds() + CompareChild.WARMUP_ROUNDS * (s.warmupSeconds() + 30L) + 90) + 120;
        String failure = null;
        if (!p.waitFor(timeout, TimeUnit.SECONDS)) {
            p.destroyForcibly().waitFor(60, TimeUnit.SECONDS);
            failure = "child JVM timed out after " + timeout + " s (see " + log.getFileName() + ")";
        } else if (p.exitValue() != 0) {
            failure = "child JVM exited with code " + p.exitValue() + " (see logs/" + log.getFileName() + ")";
        }
        List<PhaseResult> r = PhaseResult.read(result, setup, s.sync(), phases, failure);
        StoreDirs.delete(work);
        return r;
    }
}
