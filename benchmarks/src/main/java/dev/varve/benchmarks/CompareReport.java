package dev.varve.benchmarks;

import dev.varve.config.WalSyncMode;

import java.io.IOException;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.ZonedDateTime;
import java.time.format.DateTimeFormatter;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.function.Function;

/**
 * Turns the results of {@link CompareJob} into {@code BENCHMARKS.md}, SVG charts beside it, and the console table.
 * One table per sync mode in the shape of IEP-113's: a block of rows per phase (throughput, latency, WAL bytes,
 * checkpoint pages, recovery data, page writes, fsync, checkpoint time, throttling), one column per configuration,
 * then Varve/peer ratios of like with like.
 */
final class CompareReport {
    static final String FILE = "BENCHMARKS.md";

    /** A row: what it shows, the number behind it (null = not measured) and how to print it. */
    record Row(String label, Function<PhaseResult, Double> value, Function<Double, String> format) {
    }

    /** Varve/peer pairs of like with like. */
    record Pair(CompareSetup varve, CompareSetup peer) {
        String label() {
            return varve.label + " ÷ " + peer.label;
        }
    }

    static final List<Pair> PAIRS = List.of(
            new Pair(CompareSetup.VARVE_WAL_PHYSICAL, CompareSetup.IGNITE_WAL_PHYSICAL),
            new Pair(CompareSetup.VARVE_RF_DISABLED, CompareSetup.IGNITE_RECOVERY_DATA),
            new Pair(CompareSetup.VARVE_RF_SNAPPY, CompareSetup.H2_MVSTORE),
            new Pair(CompareSetup.VARVE_RF_SNAPPY, CompareSetup.ROCKSDB));

    private final CompareSettings settings;
    private final List<ComparePhase> phases;
    private final List<CompareSetup> setups;
    private final Map<WalSyncMode, List<PhaseResult>> results;
    private final MachineInfo machine;
    private final List<String> jvmFlags;
    /** The flags after {@code --compare} in the command that ran ({@link CompareJob#flags()}). */
    private final String flags;
    private final double minutes;

    CompareReport(CompareSettings settings, List<ComparePhase> phases, List<CompareSetup> setups, Map<WalSyncMode, List<PhaseResult>> results,
                  MachineInfo machine, List<String> jvmFlags, String flags, double minutes) {
        this.settings = settings;
        this.phases = phases;
        this.setups = setups;
        this.results = results;
        this.machine = machine;
        this.jvmFlags = jvmFlags;
        this.flags = flags;
        this.minutes = minutes;
    }

    /** The pairs whose both sides ran. */
    List<Pair> pairs() {
        return PAIRS.stream().filter(p -> setups.contains(p.varve()) && setups.contains(p.peer())).toList();
    }

    // ---- rows ----

    private static Double v(PhaseResult r, String key) {
        Long x = r.get(key);
        return x == null ? null : x.doubleValue();
    }

    /** A total divided by the puts of the phase, so systems that ran at different speeds compare fairly. */
    private static Double perPut(PhaseResult r, String key) {
        Long ops = r.get("ops");
        Long x = r.get(key);
        return x == null || ops == null || ops == 0 ? null : (double) x / ops;
    }

    /** CPU time over the phase's wall time: how many cores it kept busy. */
    private static Double cores(PhaseResult r, Long cpuNanos) {
        Long nanos = r.get("nanos");
        return cpuNanos == null || nanos == null || nanos == 0 ? null : (double) cpuNanos / nanos;
    }

    private static Double perCheckpointMs(PhaseResult r, String key) {
        Long cps = r.get("checkpoints");
        Long x = r.get(key);
        if (cps == null || x == null) return null;
        return cps == 0 ? 0.0 : x / 1e6 / cps;
    }

    static final Function<Double, String> INT = d -> String.format("%,.0f", d);
    static final Function<Double, String> ONE = d -> String.format("%,.1f", d);
    static final Function<Double, String> TWO = d -> String.format("%,.2f", d);
    static final Function<Double, String> MIB = d -> String.format("%,.1f", d / 1048576.0);

    static List<Row> rows() {
        List<Row> r = new ArrayList<>();
        r.add(new Row("throughput, puts/s", PhaseResult::putsPerSecond, INT));
        r.add(new Row("latency p50, µs", x -> x.get("p50") == null ? null : x.get("p50") / 1e3, ONE));
        r.add(new Row("latency p99, µs", x -> x.get("p99") == null ? null : x.get("p99") / 1e3, ONE));
        r.add(new Row("latency max, µs", x -> x.get("max") == null ? null : x.get("max") / 1e3, ONE));
        r.add(new Row("CPU per put, µs (every thread)", x -> perPut(x, "cpuNanos") == null ? null : perPut(x, "cpuNanos") / 1e3, ONE));
        r.add(new Row("CPU of the client threads, cores", x -> cores(x, x.get("writerCpuNanos")), TWO));
        r.add(new Row("CPU of every other thread, cores", x -> x.get("cpuNanos") == null || x.get("writerCpuNanos") == null ? null
                : cores(x, x.get("cpuNanos") - x.get("writerCpuNanos")), TWO));
        r.add(new Row("JIT compiling in the phase, ms", x -> v(x, "jitMillis"), INT));
        r.add(new Row("WAL, MiB", x -> v(x, "walBytes"), MIB));
        r.add(new Row("WAL bytes per put", x -> perPut(x, "walBytes"), ONE));
        r.add(new Row("checkpoints", x -> v(x, "checkpoints"), INT));
        r.add(new Row("checkpoint pages", x -> v(x, "cpPages"), INT));
        r.add(new Row("checkpoint pages per 1,000 puts", x -> perPut(x, "cpPages") == null ? null : perPut(x, "cpPages") * 1000, ONE));
        r.add(new Row("recovery data, MiB", x -> v(x, "rfBytes"), MIB));
        r.add(new Row("recovery-data write, ms/cp", x -> perCheckpointMs(x, "rfNanos"), ONE));
        r.add(new Row("page write, ms/cp", x -> perCheckpointMs(x, "pageWriteNanos"), ONE));
        r.add(new Row("fsync, ms/cp", x -> perCheckpointMs(x, "fsyncNanos"), ONE));
        r.add(new Row("checkpoint total, ms/cp", x -> perCheckpointMs(x, "cpTotalNanos"), ONE));
        r.add(new Row("checkpoint lock hold, ms/cp", x -> perCheckpointMs(x, "lockNanos"), ONE));
        r.add(new Row("throttled, ms", x -> x.get("throttledNanos") == null ? null : x.get("throttledNanos") / 1e6, INT));
        r.add(new Row("on disk at end, MiB", x -> v(x, "storeBytes"), MIB));
        r.add(new Row("on disk per put, bytes", x -> perPut(x, "storeBytes"), ONE));
        return r;
    }

    private PhaseResult find(WalSyncMode sync, ComparePhase phase, CompareSetup setup) {
        for (PhaseResult r : results.getOrDefault(sync, List.of())) if (r.phase() == phase && r.setup() == setup) return r;
        return null;
    }

    private static String cell(PhaseResult r, Row row) {
        if (r == null) return "-";
        if (r.error() != null) return "failed";
        Double d = row.value().apply(r);
        return d == null ? "n/a" : row.format().apply(d);
    }

    private static String ratio(PhaseResult a, PhaseResult b, Row row) {
        if (a == null || b == null || a.error() != null || b.error() != null) return "-";
        Double x = row.value().apply(a);
        Double y = row.value().apply(b);
        if (x == null || y == null || y == 0 || (x == 0 && y == 0)) return "-";
        double q = x / y;
        return String.format(q < 0.1 ? "%.3fx" : "%.2fx", q);
    }

    private List<String> headings() {
        List<String> h = new ArrayList<>();
        for (CompareSetup s : setups) h.add(s.label);
        for (Pair p : pairs()) h.add(p.label());
        return h;
    }

    /** The IEP-shaped table for one sync mode: [row label, cells...] lines; a phase heading line has one cell. */
    List<List<String>> table(WalSyncMode sync) {
        List<List<String>> t = new ArrayList<>();
        for (ComparePhase phase : phases) {
            t.add(List.of(phaseTitle(phase)));
            for (Row row : rows()) {
                List<String> line = new ArrayList<>();
                line.add(phase.reads() ? row.label().replaceAll("\\bput", "get") : row.label()); // "puts/s", "per put"; not "throughput"
                for (CompareSetup s : setups) line.add(cell(find(sync, phase, s), row));
                for (Pair p : pairs()) line.add(ratio(find(sync, phase, p.varve()), find(sync, phase, p.peer()), row));
                t.add(line);
            }
        }
        return t;
    }

    /** Throughput and p99 per phase: the headline. */
    List<List<String>> headline(WalSyncMode sync) {
        List<List<String>> t = new ArrayList<>();
        Row tput = rows().get(0);
        Row p99 = rows().get(2);
        for (ComparePhase phase : phases) {
            for (Row row : List.of(tput, p99)) {
                List<String> line = new ArrayList<>();
                line.add(phaseTitle(phase) + (row != tput ? ", p99 µs" : phase.reads() ? ", gets/s" : ", puts/s"));
                for (CompareSetup s : setups) line.add(cell(find(sync, phase, s), row));
                for (Pair p : pairs()) line.add(ratio(find(sync, phase, p.varve()), find(sync, phase, p.peer()), row));
                t.add(line);
            }
        }
        return t;
    }

    String phaseTitle(ComparePhase p) {
        String t = p.title;
        if (p.writers == 0 && settings.threads() > 1) t += ", " + settings.threads() + " writers";
        if (p.batch) t += " of " + settings.batchSize();
        if (p.fixedRate) t += String.format(" at %,d puts/s", settings.rate());
        return t;
    }

    // ---- console ----

    void printConsole(PrintStream out) {
        for (WalSyncMode sync : results.keySet()) {
            out.printf("== %s: %s ==%n", sync, syncMeaning(sync));
            TextTable tt = new TextTable("", headings());
            for (List<String> line : table(sync)) {
                if (line.size() == 1) {
                    List<String> empty = new ArrayList<>();
                    for (int i = 0; i < headings().size(); i++) empty.add("");
                    tt.row("-- " + line.get(0), empty);
                } else {
                    tt.row(line.get(0), line.subList(1, line.size()));
                }
            }
            tt.print(out);
            out.println();
        }
    }

    static String syncMeaning(WalSyncMode sync) {
        return switch (sync) {
            case FSYNC -> "every write waits for fsync (Varve FSYNC, Ignite WALMode.FSYNC, H2 commit + sync, RocksDB WriteOptions.sync=true)";
            case LOG_ONLY -> "every write survives a process crash, not a power loss (Varve LOG_ONLY, Ignite WALMode.LOG_ONLY, H2 commit without "
                    + "sync, RocksDB WriteOptions.sync=false)";
            // no peer has Varve's BACKGROUND: say what each was set to rather than claim one level for all
            case BACKGROUND -> "not the same durability for every system: Varve BACKGROUND (LOG_ONLY plus an fsync every walFlushFrequency), "
                    + "Ignite WALMode.BACKGROUND (buffered: a process crash may lose writes), H2 commit without sync and RocksDB "
                    + "WriteOptions.sync=false (each write survives a process crash, no fsync)";
        };
    }

    // ---- markdown and charts ----

    private static String md(List<String> header, List<List<String>> rows) {
        StringBuilder sb = new StringBuilder();
        sb.append("| ").append(String.join(" | ", header)).append(" |\n|");
        for (int i = 0; i < header.size(); i++) sb.append(i == 0 ? " --- |" : " ---: |");
        sb.append('\n');
        for (List<String> r : rows) {
            if (r.size() == 1) {
                sb.append("| **").append(r.get(0)).append("** |");
                for (int i = 1; i < header.size(); i++) sb.append(" |");
                sb.append('\n');
            } else {
                sb.append("| ").append(String.join(" | ", r)).append(" |\n");
            }
        }
        return sb.toString();
    }

    private static String slug(WalSyncMode sync, ComparePhase p) {
        return sync.name().toLowerCase(Locale.ROOT).replace('_', '-') + "-" + p.name().toLowerCase(Locale.ROOT).replace('_', '-');
    }

    /** A chart this report writes: {@code <phase>-throughput.svg}, {@code -checkpoint-buffer.svg}, {@code -dirty-pages.svg}. */
    private static boolean isChart(Path p) {
        String n = p.getFileName().toString();
        return n.endsWith("-throughput.svg") || n.endsWith("-checkpoint-buffer.svg") || n.endsWith("-dirty-pages.svg");
    }

    /** Writes BENCHMARKS.md and the charts into {@code dir}; returns the report's path. */
    Path write(Path dir) throws IOException {
        Files.createDirectories(dir);
        try (var s = Files.list(dir)) {
            for (Path p : s.filter(CompareReport::isChart).toList()) Files.delete(p); // last run's; other jobs' charts stay
        }
        StringBuilder sb = new StringBuilder();
        sb.append("# Varve benchmarks: Varve vs Apache Ignite native persistence vs H2 MVStore vs RocksDB\n\n");
        sb.append("Generated by `java -jar benchmarks/target/varve-benchmarks.jar --compare").append(flags).append("` on ")
                .append(ZonedDateTime.now().format(DateTimeFormatter.ofPattern("yyyy-MM-dd HH:mm z"))).append(String.format(" in %.1f minutes. ", minutes))
                .append("Every figure below comes from that one invocation: each configuration ran in its own child JVM, one after another, "
                        + "on the same machine and disk, with the same load and durability.\n\n");
        sb.append("## Machine\n\n");
        sb.append("| | |\n| --- | --- |\n");
        sb.append("| CPU | ").append(machine.cores()).append(" cores, ").append(machine.cpu()).append(" |\n");
        sb.append("| memory | ").append(Math.round(machine.memoryBytes() / 1073741824.0)).append(" GiB |\n");
        sb.append("| OS | ").append(machine.os()).append(" |\n");
        sb.append("| JVM | ").append(machine.jvm()).append(" |\n");
        sb.append("| store file system | ").append(machine.fileSystem()).append(" |\n");
        sb.append(String.format(Locale.ROOT, "| one 4 KiB write + fdatasync at the start (median of 200) | %.0f µs |%n", machine.fsyncMicros()));
        sb.append("| load average at start / end | ").append(machine.loadAverage()).append(" / ").append(MachineInfo.currentLoadAverage()).append(" |\n\n");
        sb.append("On a shared or virtual machine the absolute numbers move from run to run; the ratios between configurations that ran "
                + "seconds apart are the figures to read.\n\n");

        sb.append("## The load\n\n");
        sb.append(String.format("- %d writer thread(s); keys are 8-byte ids (Varve: big-endian bytes; Ignite and H2: `Long`), values %d..%d bytes of "
                        + "text-like data (a random 16-byte head, then words: compresses a few times, like real records), one of %d drawn at random "
                        + "for each put, so an overwrite changes the value and, mostly, its length.%n",
                settings.threads(), CompareSettings.MIN_VALUE_BYTES, CompareSettings.MAX_VALUE_BYTES, CompareChild.VALUE_POOL));
        sb.append(String.format("- Each phase: a fresh store, then a full collection (`System.gc()`, as JMH's `-gc` option), %d s measured. Each child JVM first warms up, unreported: every write phase "
                + "for %d s on a fresh store, in rounds until the JIT compiler worked at most %d%% of a round, at most %d rounds. CPU rows: CPU time over the measured interval from the JVM — every thread of the process (a JNI peer's native threads "
                + "included; read just before the client threads start), the client threads alone, and the rest "
                + "(checkpoints, WAL, compaction, JIT, GC); JIT compiling: the compiler's "
                + "time in the interval. Phases: %s.%n", settings.seconds(), settings.warmupSeconds(), CompareChild.SETTLED_JIT_PERCENT,
                CompareChild.WARMUP_ROUNDS, String.join("; ", phases.stream().map(this::phaseTitle).toList())));
        sb.append(String.format("- Random phases draw ids uniformly from [0, %,d); unique-key phases write consecutive, never repeated ids "
                + "(IEP-113's disk-heavy case: every put lands on new pages, so checkpoints write much).%n", settings.keys()));
        sb.append(String.format("- Fixed-rate phases issue %,d puts/s in total and time each write from when it was due (no coordinated omission). "
                + "Batches put %d entries per call; latency is per call.%n", settings.rate(), settings.batchSize()));
        sb.append("- Throughput is puts per second (a batch counts its entries). Latency from HdrHistogram. Checkpoint figures are summed over "
                + "the checkpoints that completed during the phase and shown per checkpoint.\n");
        if (phases.stream().anyMatch(ComparePhase::reads)) sb.append(String.format("- Gets phases: every id of [0, %,d) is put first, in id "
                + "order, %,d per batch, with %d-byte values; then the store settles (Varve and Ignite: a checkpoint; RocksDB: a memtable flush, so "
                + "gets read SST files through the block cache) and every id is read once, untimed. The timed gets draw ids uniformly and "
                + "compare each value with the one put (the same rebuild per get for every system).%n", settings.keys(),
                CompareChild.PRELOAD_BATCH, ComparePhase.GET_VALUE_BYTES));
        sb.append('\n');

        sb.append("## What each system was given\n\n");
        sb.append(String.format("Same for all: page memory %d MiB (Varve and Ignite data region; H2 page cache), page size %d, %d partitions, "
                        + "checkpoint every %d ms with %d checkpoint threads and a %d MiB checkpoint buffer (Varve and Ignite), the same durability per sync "
                        + "mode (below). Child JVM: `%s`.%n%n",
                settings.regionBytes() >> 20, settings.pageSize(), settings.partitions(), settings.checkpointMillis(),
                CompareSettings.CHECKPOINT_THREADS, settings.checkpointBufferBytes() >> 20,
                String.join(" ", jvmFlags.stream().filter(f -> !f.startsWith("--add-opens")).toList())
                        + " + Ignite's " + CompareJob.MODULE_FLAGS.size() + " --add-opens flags"));
        Map<CompareSetup, String> desc = new LinkedHashMap<>();
        for (List<PhaseResult> rs : results.values()) for (PhaseResult r : rs) if (!r.description().isEmpty()) desc.putIfAbsent(r.setup(), r.description());
        for (CompareSetup s : setups) {
            sb.append("- **").append(s.label).append("**: ").append(desc.getOrDefault(s, "(did not start; see the logs)")).append('\n');
        }
        sb.append('\n');
        for (WalSyncMode sync : results.keySet()) sb.append("- ").append(sync).append(": ").append(syncMeaning(sync)).append('\n');
        sb.append('\n');

        List<String> header = new ArrayList<>();
        header.add("");
        header.addAll(headings());
        sb.append("## Headline\n\n");
        for (WalSyncMode sync : results.keySet()) {
            sb.append("**").append(sync).append("**\n\n").append(md(header, headline(sync))).append('\n');
        }
        sb.append("Ratios compare like with like: Varve WAL_PHYSICAL with Ignite's physical WAL records, Varve recovery files uncompressed with "
                + "Ignite's uncompressed checkpoint recovery data, and Varve's default (recovery files, SNAPPY) with H2 MVStore and with RocksDB "
                + "(which compresses its files with Snappy by default). Above 1x means "
                + "Varve's figure is the larger (better for throughput, worse for latency, bytes and times).\n\n");

        for (WalSyncMode sync : results.keySet()) {
            sb.append("## ").append(sync).append(": all figures\n\n");
            sb.append(md(header, table(sync))).append('\n');
            for (ComparePhase p : phases) {
                String slug = slug(sync, p);
                writeCharts(dir, sync, p, slug);
                sb.append("### ").append(phaseTitle(p)).append(" (").append(sync).append(")\n\n");
                sb.append("![throughput over time](").append(slug).append("-throughput.svg)\n\n");
                sb.append("![checkpoint buffer over time](").append(slug).append("-checkpoint-buffer.svg)\n\n");
                sb.append("![dirty pages over time](").append(slug).append("-dirty-pages.svg)\n\n");
            }
            StringBuilder errors = new StringBuilder();
            for (PhaseResult r : results.get(sync)) {
                if (r.error() != null) errors.append("- ").append(r.setup().label).append(", ").append(phaseTitle(r.phase())).append(": ")
                        .append(r.error()).append('\n');
            }
            if (errors.length() > 0) sb.append("Failures:\n\n").append(errors).append('\n');
            StringBuilder behind = new StringBuilder();
            for (PhaseResult r : results.get(sync)) {
                if (r.error() == null && r.phase().fixedRate && r.putsPerSecond() < 0.95 * settings.rate()) {
                    behind.append("- ").append(r.setup().label).append(", ").append(phaseTitle(r.phase())).append(String.format(
                            ": kept up only %,.0f puts/s; its latencies include the time writes waited for their turn%n", r.putsPerSecond()));
                }
            }
            if (behind.length() > 0) sb.append("Could not keep the fixed rate:\n\n").append(behind).append('\n');
        }

        sb.append("## Notes on the figures\n\n");
        sb.append("- **Checkpoint buffer.** Pages in the copy-on-write checkpoint buffer: Varve's `VarveMetrics.checkpointBufferUsedPages()`, "
                + "Ignite's `io.datastorage.UsedCheckpointBufferPages`; the dirty-page chart is `VarveMetrics.dirtyPages()` and Ignite's "
                + "`DirtyPages`. H2 MVStore has neither (copy-on-write B-tree, no checkpoints).\n");
        sb.append("- **WAL bytes.** Varve: `walBytesWritten()`; Ignite: `io.datastorage.WalWrittenBytes`; H2: bytes its FileStore wrote, "
                + "which is the whole log-structured store (no separate log). Recovery data: Varve's recovery files, Ignite's "
                + "`LastCheckpointRecoveryDataSize` summed.\n");
        sb.append("- **Checkpoint times.** Varve: `VarveMetrics.lastCheckpoint()` sampled every 5 ms; Ignite: its `LastCheckpoint*` metrics, "
                + "milliseconds, sampled the same way. Ignite's fsync figure is its checkpoint's sync phase; throttling is Ignite's "
                + "`TotalThrottlingTime` and Varve's `throttledNanos()`.\n");
        sb.append("- **Batches.** Varve's batch is one atomic `store.write`; Ignite's `putAll` on an ATOMIC cache is not atomic across keys "
                + "(a transactional cache would be, at a cost); H2's batch is one commit.\n");
        sb.append("- **Writers.** The writer phases put at full speed from 1, 2, 4 or 8 threads; each Varve writer puts into a partition of "
                + "its own (a caller-placed table), the peers take the same keys into their one cache, map or database. The FSYNC phase "
                + "runs with every write waiting for fsync whatever the run's sync mode, so concurrent writers can share an fsync "
                + "(group commit).\n");
        sb.append("- **Per put.** WAL bytes, checkpoint pages and bytes on disk are also divided by the puts of the phase, so systems that "
                + "ran at different speeds compare fairly. RocksDB has no checkpoints: its memtable flushes and compactions show in "
                + "its bytes on disk; its WAL bytes are its `WAL_FILE_BYTES` ticker. Bytes on disk include files a system preallocates "
                + "at full size (Varve's and Ignite's WAL segments, 64 MiB each): a fixed cost, not a per-put one, that dominates the "
                + "per-put figure of a short phase; read WAL bytes per put for what each put costs.\n");
        sb.append("- Raw figures and time series: `data/`; each child JVM's output: `logs/`.\n");
        Path md = dir.resolve(FILE);
        Files.writeString(md, sb.toString(), StandardCharsets.UTF_8);
        return md;
    }

    private void writeCharts(Path dir, WalSyncMode sync, ComparePhase phase, String slug) throws IOException {
        String what = phaseTitle(phase) + ", " + sync;
        SvgChart tput = new SvgChart("Throughput: " + what, "seconds", phase.reads() ? "gets/s" : "puts/s");
        SvgChart buf = new SvgChart("Checkpoint buffer: " + what, "seconds", "pages");
        SvgChart dirty = new SvgChart("Dirty pages: " + what, "seconds", "pages");
        for (CompareSetup s : setups) {
            PhaseResult r = find(sync, phase, s);
            List<long[]> series = r == null ? List.of() : r.series();
            boolean dashed = s.kind != CompareSetup.Kind.VARVE;
            int n = Math.max(0, series.size() - 1);
            double[] x = new double[n];
            double[] y = new double[n];
            for (int i = 1; i < series.size(); i++) {
                long[] a = series.get(i - 1);
                long[] b = series.get(i);
                x[i - 1] = b[0] / 1000.0;
                double dt = (b[0] - a[0]) / 1000.0;
                y[i - 1] = dt <= 0 ? -1 : (b[1] - a[1]) / dt;
            }
            tput.add(s.label, x, y, dashed);
            double[] bx = new double[series.size()];
            double[] by = new double[series.size()];
            double[] dy = new double[series.size()];
            for (int i = 0; i < series.size(); i++) {
                bx[i] = series.get(i)[0] / 1000.0;
                by[i] = series.get(i)[2];
                dy[i] = series.get(i)[3];
            }
            buf.add(s.label, bx, by, dashed);
            dirty.add(s.label, bx, dy, dashed);
        }
        Files.writeString(dir.resolve(slug + "-throughput.svg"), tput.toSvg(), StandardCharsets.UTF_8);
        Files.writeString(dir.resolve(slug + "-checkpoint-buffer.svg"), buf.toSvg(), StandardCharsets.UTF_8);
        Files.writeString(dir.resolve(slug + "-dirty-pages.svg"), dirty.toSvg(), StandardCharsets.UTF_8);
    }
}
