package dev.varve.benchmarks;

import static dev.varve.benchmarks.RetentionComparison.*;

import dev.varve.benchmarks.RankedUpdateLoad.Ranking;

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
import java.util.function.Function;
import java.util.stream.Collectors;
import java.util.stream.IntStream;

/**
 * Turns the runs of {@link RetentionComparison} into its five sections: each printed to the console as soon as its runs
 * are done and collected into {@value #FILE}, which is written at the end with the plateau chart beside it. Kept apart
 * from the measuring, as {@link CompareReport} is from {@link CompareJob}: the comparison decides what runs and what is
 * timed, this class only how the figures are laid out and worded, so either can change without reading the other.
 */
final class RetentionReport {
    static final String FILE = "RETENTION.md";
    private static final String PLATEAU_CHART = "retention-archive-plateau.svg";

    /** How the figures of a {@link Run} were taken, for the notes under its table. */
    private static final String AFTER_THE_RUN = "Throughput, checkpoints and throttling cover the timed run; the archive figures (and copies) are read "
            + "after one more checkpoint once the timer stopped (\"checkpoint after the run\"), so the archive has caught up and reclamation "
            + "has had its turn.";

    private final Options opts;
    private final PrintStream out;
    private final StringBuilder md = new StringBuilder();

    RetentionReport(Options opts, PrintStream out) {
        this.opts = opts;
        this.out = out;
    }

    // ---------------------------------------------------------------- sections

    void printCheckpointCost(List<Run> runs) {
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

    void printPlateau(Run r) throws IOException {
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

    void printLazyVsEager(List<Run> runs) {
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

    void printDensity(List<Run> runs) {
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

    void printAsOf(AsOfReads a) {
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

    Path write(MachineInfo machine, String load, double minutes) throws IOException {
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
        return Arrays.stream(perLevel).mapToObj(RetentionReport::size).collect(Collectors.joining(" / "));
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
