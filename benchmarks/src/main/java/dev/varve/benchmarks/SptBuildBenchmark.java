package dev.varve.benchmarks;

import dev.varve.config.ConfigLimits;
import dev.varve.core.util.LongLongMap;

import dev.varve.snapshot.SkippyProbe;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Comparator;
import java.util.List;
import java.util.SplittableRandom;
import java.util.concurrent.TimeUnit;
import java.util.stream.Stream;

import org.openjdk.jmh.annotations.Benchmark;
import org.openjdk.jmh.annotations.BenchmarkMode;
import org.openjdk.jmh.annotations.Fork;
import org.openjdk.jmh.annotations.Level;
import org.openjdk.jmh.annotations.Measurement;
import org.openjdk.jmh.annotations.Mode;
import org.openjdk.jmh.annotations.OutputTimeUnit;
import org.openjdk.jmh.annotations.Param;
import org.openjdk.jmh.annotations.Scope;
import org.openjdk.jmh.annotations.Setup;
import org.openjdk.jmh.annotations.State;
import org.openjdk.jmh.annotations.TearDown;
import org.openjdk.jmh.annotations.Warmup;

/**
 * Skippy: time to build SPT(v) for an early snapshot v over one overwrite cycle, per update skew and Skippy height.
 * It drives the archive's own Skippy through {@link SkippyProbe} and fills a
 * {@link LongLongMap}.
 *
 * <p>The Maplog of a trial is written once, in a temp directory, through {@link SkippyProbe#append} (so the upper levels
 * and uplinks are the ones the archiver would write). Skew {@code x/y}: x% of the mappings go to the hot y% of the
 * {@link #pages} pages, the rest to the cold pages. Cold mappings walk the cold pages in one random order, hot mappings
 * walk the hot pages in a random order reshuffled every pass, and a page is mapped at most once per snapshot; the
 * snapshot number goes up every {@link #perSnapshot} mappings. The Maplog ends when every cold page has been mapped
 * once — one overwrite cycle: every page captured at least once — so it holds {@code coldPages / coldShare}
 * mappings: {@code pages} for 50/50, 5x {@code pages} x 0.8 for 80/20, 100x {@code pages} x 0.99 for 99/1.
 *
 * <p>The measured build scans from Start(2) (position {@link #perSnapshot}, inside the first node) to the end into a
 * fresh table, as a snapshot view's open does. The setup checks the built table against the
 * first-encountered mappings it recorded while writing.
 */
@BenchmarkMode(Mode.AverageTime)
@OutputTimeUnit(TimeUnit.MILLISECONDS)
@Warmup(iterations = 2, time = 2)
@Measurement(iterations = 3, time = 2)
@Fork(value = 1, jvmArgsAppend = {"-Xms1g", "-Xmx1g"})
@State(Scope.Benchmark)
public class SptBuildBenchmark {
    @Param({"0", "1", "2", "3"})
    public int height;

    @Param({"50/50", "80/20", "99/1"})
    public String skew;

    /** Mappings per Skippy node: the store's default (skippyNodeEntries), the constant rather than a copy of it. */
    @Param({"" + ConfigLimits.SKIPPY_NODE_ENTRIES_DEFAULT})
    public int nodeEntries;

    /** Pages in the database. */
    @Param({"100000"})
    public int pages;

    /** Mappings per snapshot (K). */
    @Param({"100"})
    public int perSnapshot;

    private Path dir;
    private SkippyProbe skippy;
    private long from;
    private long end;

    @Setup(Level.Trial)
    public void writeMaplog() throws IOException {
        String[] parts = skew.split("/");
        if (parts.length != 2) throw new IllegalArgumentException("skew must be x/y, was " + skew);
        double hotShare = Integer.parseInt(parts[0]) / 100.0;
        int hotPages = (int) Math.round(pages * Integer.parseInt(parts[1]) / 100.0);
        int coldPages = pages - hotPages;
        if (hotPages < perSnapshot || coldPages < 1 || hotShare <= 0 || hotShare >= 1)
            throw new IllegalArgumentException("skew " + skew + " over " + pages + " pages leaves " + hotPages + " hot and " + coldPages
                    + " cold pages; need at least perSnapshot (" + perSnapshot + ") hot and one cold");

        dir = Files.createTempDirectory("varve-sptbuild-");
        skippy = new SkippyProbe(dir, height, nodeEntries);
        from = perSnapshot; // Start(2)
        SplittableRandom rnd = new SplittableRandom(1);
        int[] cold = shuffled(hotPages, coldPages, rnd);
        int[] hot = shuffled(0, hotPages, rnd);
        int hotAt = 0;
        int coldAt = 0;
        long[] mappedIn = new long[pages]; // snapshot a page was last mapped for
        long[] first = new long[pages]; // first Maplog position at or after from: what SPT(2) must hold
        java.util.Arrays.fill(first, -1);
        long position = 0;
        long started = System.nanoTime();
        while (coldAt < coldPages) {
            long snapshot = 1 + position / perSnapshot;
            int page;
            if (rnd.nextDouble() < hotShare) {
                if (hotAt == hotPages) {
                    shuffle(hot, rnd);
                    hotAt = 0;
                }
                // a page is captured at most once per snapshot: swap a repeat with a later page of this pass
                while (mappedIn[hot[hotAt]] == snapshot && hotAt < hotPages - 1) swap(hot, hotAt, hotAt + 1 + rnd.nextInt(hotPages - hotAt - 1));
                page = hot[hotAt++];
                if (mappedIn[page] == snapshot) continue; // the pass's last page was mapped already: redraw
            } else {
                page = cold[coldAt++];
            }
            mappedIn[page] = snapshot;
            if (position >= from && first[page] < 0) first[page] = position;
            skippy.append(page, snapshot, position); // the address stands for the Pagelog record: capture number = position
            position++;
        }
        end = skippy.size();

        // the built table holds exactly the first-encountered mappings from Start(2)
        LongLongMap spt = new LongLongMap(1024);
        skippy.buildSpt(from, spt, end);
        int expected = 0;
        for (int p = 0; p < pages; p++) {
            if (first[p] < 0) continue;
            expected++;
            long got = spt.get(p, -1);
            if (got != first[p]) throw new IllegalStateException("SPT maps page " + p + " to " + got + ", expected " + first[p]);
        }
        if (spt.size() != expected) throw new IllegalStateException("SPT holds " + spt.size() + " pages, expected " + expected);
        System.out.printf("%n[skew=%s height=%d] %d pages (%d hot), %d mappings in %d snapshots, Skippy files %.1f MiB (Maplog %.1f MiB), "
                        + "SPT(2) %d pages; written in %.1f s%n", skew, height, pages, hotPages, end, (end - 1) / perSnapshot + 1,
                skippy.bytes() / 1048576.0, end * SkippyProbe.MAPLOG_ENTRY_BYTES / 1048576.0, expected, (System.nanoTime() - started) / 1e9);
    }

    @TearDown(Level.Trial)
    public void delete() throws IOException {
        try {
            if (skippy != null) skippy.close();
        } finally {
            try (Stream<Path> s = Files.walk(dir)) {
                List<Path> paths = s.sorted(Comparator.reverseOrder()).toList();
                for (Path p : paths) Files.delete(p);
            }
        }
    }

    /** SPT(2) from Start(2) to the end of the Maplog; returns the table size. */
    @Benchmark
    public int buildSpt() {
        LongLongMap spt = new LongLongMap(1024); // as SnapshotPageTable starts it
        skippy.buildSpt(from, spt, end);
        return spt.size();
    }

    private static int[] shuffled(int first, int n, SplittableRandom rnd) {
        int[] a = new int[n];
        for (int i = 0; i < n; i++) a[i] = first + i;
        shuffle(a, rnd);
        return a;
    }

    private static void shuffle(int[] a, SplittableRandom rnd) {
        for (int i = a.length - 1; i > 0; i--) swap(a, i, rnd.nextInt(i + 1));
    }

    private static void swap(int[] a, int i, int j) {
        int t = a[i];
        a[i] = a[j];
        a[j] = t;
    }
}
