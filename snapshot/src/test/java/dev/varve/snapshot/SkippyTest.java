package dev.varve.snapshot;

import dev.varve.core.util.LongLongMap;

import dev.varve.core.io.FileIOFactory;
import dev.varve.core.io.UnforcedFileIOFactory;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;

import java.nio.file.Path;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Random;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** SPT(v) built with Skippy levels equals the one built by a plain Maplog scan, for uniform and skewed updates. */
@Timeout(180)
class SkippyTest {
    @TempDir
    Path dir;

    /** A Maplog of {@code mappings} captures over {@code pages} pages, hot share {@code hot} of updates on 1% of pages. */
    static List<long[]> workload(long seed, int mappings, int pages, double hot, int snapshots) {
        Random r = new Random(seed);
        List<long[]> out = new ArrayList<>();
        int hotPages = Math.max(1, pages / 100);
        for (int i = 0; i < mappings; i++) {
            long snapshot = 1 + (long) i * snapshots / mappings;
            long page = r.nextDouble() < hot ? r.nextInt(hotPages) : r.nextInt(pages);
            out.add(new long[]{page, snapshot});
        }
        return out;
    }

    private static Map<Long, Long> expected(List<long[]> maplog, long from) {
        Map<Long, Long> m = new HashMap<>();
        for (int i = (int) from; i < maplog.size(); i++) m.putIfAbsent(maplog.get(i)[0], (long) i);
        return m;
    }

    private static Map<Long, Long> spt(Skippy s, long from) {
        LongLongMap map = new LongLongMap(16);
        s.buildSpt(from, map, s.size());
        Map<Long, Long> m = new HashMap<>();
        // LongLongMap has no iteration: probe every page id the workload can produce
        for (long p = 0; p < 5000; p++) {
            long v = map.get(p, -1);
            if (v >= 0) m.put(p, v);
        }
        assertEquals(map.size(), m.size(), "every mapping is for a probed page");
        return m;
    }

    @ParameterizedTest(name = "height {0}, node {1}, hot share {2}")
    @CsvSource({"1,16,0.5", "2,16,0.8", "3,8,0.99", "3,64,0.0", "2,32,0.99", "1,8,0.8"})
    void sptWithLevelsEqualsPlainScan(int height, int node, double hot) throws Exception {
        long seed = 17L * height + node;
        java.nio.file.Files.createDirectories(dir.resolve("plain"));
        java.nio.file.Files.createDirectories(dir.resolve("levels"));
        List<long[]> maplog = workload(seed, 20_000, 5000, hot, 50);
        try (Skippy plain = new Skippy(UnforcedFileIOFactory.INSTANCE, dir.resolve("plain"), 0, node, 4L * node);
             Skippy levels = new Skippy(UnforcedFileIOFactory.INSTANCE, dir.resolve("levels"), height, node, 4L * node)) {
            for (int i = 0; i < maplog.size(); i++) {
                plain.append(maplog.get(i)[0], maplog.get(i)[1], i);
                levels.append(maplog.get(i)[0], maplog.get(i)[1], i);
            }
            Random r = new Random(seed);
            for (int k = 0; k < 25; k++) {
                long from = k == 0 ? 0 : r.nextInt(maplog.size());
                Map<Long, Long> want = expected(maplog, from);
                assertEquals(want, spt(plain, from), "plain scan from " + from);
                assertEquals(want, spt(levels, from), "Skippy height " + height + " from " + from + " (seed " + seed + ")");
            }
        }
    }

    @Test
    void upperLevelsHoldFewerMappingsUnderSkew() {
        List<long[]> maplog = workload(3, 20_000, 5000, 0.99, 50);
        try (Skippy levels = new Skippy(UnforcedFileIOFactory.INSTANCE, dir, 2, 64, MaplogFile.ONE_PART)) {
            for (int i = 0; i < maplog.size(); i++) levels.append(maplog.get(i)[0], maplog.get(i)[1], i);
            assertTrue(levels.bytes() < 20_000L * MaplogDescriptor.ENTRY_SIZE * 2, "99/1 skew: promoted levels are much smaller than the Maplog");
        }
    }

    @Test
    void mappingForAnOlderSnapshotIsRefused() {
        try (Skippy s = new Skippy(UnforcedFileIOFactory.INSTANCE, dir, 1, 8, MaplogFile.ONE_PART)) {
            s.append(1, 5, 0);
            IllegalStateException e = assertThrows(IllegalStateException.class, () -> s.append(2, 4, 1));
            assertTrue(e.getMessage().contains("I7"), e.getMessage());
            assertEquals(1, s.size(), "the refused mapping was not written");
        }
    }

    @Test
    void reopenAfterTruncationRebuildsConsistentLevels() {
        List<long[]> maplog = workload(9, 5000, 800, 0.8, 20);
        try (Skippy s = new Skippy(UnforcedFileIOFactory.INSTANCE, dir, 2, 16, 64)) {
            for (int i = 0; i < maplog.size(); i++) s.append(maplog.get(i)[0], maplog.get(i)[1], i);
            s.truncate(3001); // recovery cuts the Maplog back to a checkpoint mark
            assertEquals(expected(maplog.subList(0, 3001), 100), spt(s, 100));
            for (int i = 3001; i < maplog.size(); i++) s.append(maplog.get(i)[0], maplog.get(i)[1], i);
        }
        try (Skippy s = new Skippy(UnforcedFileIOFactory.INSTANCE, dir, 2, 16, 64)) {
            assertEquals(expected(maplog, 1234), spt(s, 1234));
        }
    }

    /**
     * Reclaiming the parts before a position leaves every scan from there on exact — also after a reopen, and after
     * a crash that left promotions undone (upper levels cut back) — and gives the bytes back.
     */
    @Test
    void reclaimedPrefixLeavesLaterScansExact() throws Exception {
        List<long[]> maplog = workload(5, 20_000, 3000, 0.8, 400);
        try (Skippy s = new Skippy(UnforcedFileIOFactory.INSTANCE, dir, 2, 16, 64)) {
            for (int i = 0; i < maplog.size(); i++) s.append(maplog.get(i)[0], maplog.get(i)[1], i);
            long before = s.bytes();
            s.reclaimBefore(12_345);
            assertTrue(s.reclaimedBytes() > 0 && s.bytes() < before, "parts went: " + before + " -> " + s.bytes());
            for (long from : new long[]{12_345, 12_346, 15_000, 19_999}) assertEquals(expected(maplog, from), spt(s, from), "from " + from);
            s.reclaimBefore(11_000); // never backwards
            assertEquals(expected(maplog, 12_345), spt(s, 12_345));
        }
        // a crash between a node's promotion and its uplink: the upper levels lose their tails
        for (String f : new String[]{"skippy-uplinks-L0.log", "skippy-uplinks-L1.log"}) {
            try (var files = java.nio.file.Files.list(dir)) {
                Path last = files.filter(p -> p.getFileName().toString().startsWith(f))
                        .max(java.util.Comparator.comparingLong(p -> p.getFileName().toString().equals(f) ? 0 : Long.parseLong(p.getFileName().toString().substring(f.length() + 1))))
                        .orElseThrow();
                try (var ch = java.nio.channels.FileChannel.open(last, java.nio.file.StandardOpenOption.WRITE)) {
                    ch.truncate(Math.max(MaplogDescriptor.HEADER_SIZE, ch.size() - 3 * MaplogDescriptor.ENTRY_SIZE));
                }
            }
        }
        try (Skippy s = new Skippy(UnforcedFileIOFactory.INSTANCE, dir, 2, 16, 64)) {
            s.truncate(s.size()); // recovery repairs the levels above the Maplog
            for (long from : new long[]{12_345, 17_777, 19_999}) assertEquals(expected(maplog, from), spt(s, from), "after repair, from " + from);
            for (int i = 0; i < 500; i++) s.append(i % 3000, 1000, maplog.size() + i);
        }
    }
}
