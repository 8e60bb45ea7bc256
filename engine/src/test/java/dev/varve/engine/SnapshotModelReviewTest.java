package dev.varve.engine;

import dev.varve.config.RankTreePolicy;
import dev.varve.config.Retention;
import dev.varve.config.VarveConfig;
import dev.varve.config.WalSyncMode;
import dev.varve.core.io.UnforcedFileIOFactory;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.time.Duration;
import java.util.*;
import java.util.stream.Collectors;

import static org.junit.jupiter.api.Assertions.*;

/**
 * The snapshot API against a model kept here (a TreeMap per table per snapshot): overwrites, deletes, values over a
 * page, tables created after a snapshot, caller-placed partitions destroyed, checkpoints, snapshots by
 * {@code snapshotNow} and {@code writeAndSnapshot} at random ranks, lazy raises inside and past the page window W
 * (0, 1), diff chains bounded at 0 and 2, clean reopens and crashes ({@code halt}). After each stretch the live
 * snapshots are exactly those the keepLast/keepLast/keepAll policy keeps, with their ranks; each reads equal to its
 * model; each dropped one is listed by {@code droppedSnapshots} and refused by {@code asOf} naming its id; ids only grow.
 */
@Timeout(300)
class SnapshotModelReviewTest {
    @TempDir
    Path dir;

    static final int[] KEEP = {5, 3};

    VarveConfig config() {
        return VarveConfig.builder().path(dir).dataRegionSize(16L << 20).partitions(3)
                .walSyncMode(WalSyncMode.LOG_ONLY).checkpointFrequency(Duration.ofMillis(50)).checkpointBufferSize(1L << 20)
                .captureBufferSize(1L << 20).skippyNodeEntries(16).snapshotPageWindow(window).snapshotDiffChain(chain)
                .archiveSegmentSize(256L << 10)
                .retention(RankTreePolicy.levels(Retention.keepLast(KEEP[0]), Retention.keepLast(KEEP[1]), Retention.keepAll()))
                .walSegmentSize(4L << 20).build();
    }

    static byte[] b(String s) { return s.getBytes(StandardCharsets.UTF_8); }

    // the model: table -> key -> value; the caller-placed table "cp" keys its entries "<partition>/<key>"
    Map<String, TreeMap<String, String>> cur = new TreeMap<>();
    Map<Long, Map<String, TreeMap<String, String>>> snapModel = new TreeMap<>();
    Map<Long, Integer> ranks = new TreeMap<>();

    Map<String, TreeMap<String, String>> copy() {
        Map<String, TreeMap<String, String>> c = new TreeMap<>();
        cur.forEach((k, v) -> c.put(k, new TreeMap<>(v)));
        return c;
    }

    /** The policy read literally: a snapshot lives while some level up to its rank has it among its newest. */
    TreeSet<Long> expectedLive() {
        TreeSet<Long> live = new TreeSet<>();
        for (int level = 1; level <= 3; level++) {
            int lv = level;
            List<Long> counted = ranks.entrySet().stream().filter(e -> e.getValue() >= lv).map(Map.Entry::getKey).sorted().collect(Collectors.toList());
            int keep = level == 3 ? Integer.MAX_VALUE : KEEP[level - 1];
            for (int i = Math.max(0, counted.size() - keep); i < counted.size(); i++) live.add(counted.get(i));
        }
        return live;
    }

    /** One value in ten spans overflow pages, so their archived pre-states are read back too. */
    String value(Random r, int i) {
        int len = r.nextInt(10) == 0 ? 5000 + r.nextInt(9000) : 10 + r.nextInt(100);
        StringBuilder sb = new StringBuilder(len);
        sb.append(i).append(':');
        while (sb.length() < len) sb.append((char) ('a' + r.nextInt(26)));
        return sb.toString();
    }

    void mutate(Varve store, Random r, int step) {
        int n = 1 + r.nextInt(8);
        for (int j = 0; j < n; j++) {
            String table = "t" + r.nextInt(Math.min(4, 1 + step / 20));
            String key = "k" + r.nextInt(60);
            TreeMap<String, String> m = cur.computeIfAbsent(table, x -> new TreeMap<>());
            if (r.nextInt(5) == 0) {
                store.table(table).remove(b(key));
                m.remove(key);
            } else {
                String v = value(r, step);
                store.table(table).put(b(key), b(v));
                m.put(key, v);
            }
        }
        if (r.nextInt(15) == 0) {
            int p = r.nextInt(4);
            Table c = store.table("cp", TableOptions.callerPlaced(4));
            cur.computeIfAbsent("cp", x -> new TreeMap<>());
            c.partition(p).destroy();
            cur.get("cp").keySet().removeIf(k -> k.startsWith(p + "/"));
        }
        if (r.nextInt(3) == 0) {
            int p = r.nextInt(4);
            String key = "c" + r.nextInt(20);
            String v = value(r, step);
            store.table("cp", TableOptions.callerPlaced(4)).partition(p).put(b(key), b(v));
            cur.computeIfAbsent("cp", x -> new TreeMap<>()).put(p + "/" + key, v);
        }
    }

    Map<String, TreeMap<String, String>> read(SnapshotView v) {
        Map<String, TreeMap<String, String>> out = new TreeMap<>();
        for (String name : v.tables()) {
            TreeMap<String, String> m = new TreeMap<>();
            Table t = v.table(name);
            if (name.equals("cp")) {
                for (int p = 0; p < 4; p++) {
                    try (Cursor c = t.partition(p).scan(null, null)) {
                        while (c.next()) m.put(p + "/" + new String(c.key(), StandardCharsets.UTF_8), new String(c.value(), StandardCharsets.UTF_8));
                    }
                }
            } else {
                try (Cursor c = t.scan(null, null)) {
                    while (c.next()) m.put(new String(c.key(), StandardCharsets.UTF_8), new String(c.value(), StandardCharsets.UTF_8));
                }
            }
            out.put(name, m);
        }
        return out;
    }

    void checkAll(Varve store, String when) {
        TreeSet<Long> want = expectedLive();
        TreeSet<Long> live = store.snapshots().stream().map(SnapshotInfo::id).collect(Collectors.toCollection(TreeSet::new));
        assertEquals(want, live, when + ": live set");
        for (SnapshotInfo i : store.snapshots()) assertEquals(ranks.get(i.id()), i.rank(), when + ": rank of " + i.id());
        for (long id : want) {
            try (SnapshotView v = store.asOf(id)) {
                assertEquals(snapModel.get(id), read(v), when + ": as of " + id);
            }
        }
        Set<Long> droppedListed = store.droppedSnapshots(100000).stream().map(DroppedSnapshotInfo::id).collect(Collectors.toSet());
        for (long id : ranks.keySet()) {
            if (want.contains(id)) {
                assertFalse(droppedListed.contains(id), when + ": live " + id + " listed as dropped");
                continue;
            }
            assertTrue(droppedListed.contains(id), when + ": dropped " + id + " not listed");
            SnapshotNotFoundException e = assertThrows(SnapshotNotFoundException.class, () -> store.asOf(id));
            assertTrue(e.getMessage().contains("snapshot " + id + " "), e.getMessage());
            assertTrue(e.getMessage().contains("dropped"), e.getMessage());
        }
    }

    int window = 3, chain = 2;

    @org.junit.jupiter.params.ParameterizedTest
    @org.junit.jupiter.params.provider.ValueSource(ints = {1, 4}) // W 1 with whole pages; W 0 with chains of 2
    void modelBased(int seed) {
        Random r = new Random(seed);
        window = new int[]{0, 1, 3, 8}[seed % 4];
        chain = new int[]{0, 1, 2, 63}[(seed / 2) % 4];
        Varve store = Varve.open(config(), UnforcedFileIOFactory.INSTANCE);
        try {
            for (int step = 0; step < 400; step++) {
                mutate(store, r, step);
                int k = r.nextInt(10);
                if (k < 4) {
                    int rank = r.nextInt(10) < 6 ? 1 : r.nextInt(10) < 6 ? 2 : 3;
                    long id;
                    if (r.nextBoolean()) {
                        id = store.snapshotNow(rank);
                    } else {
                        String key = "w" + r.nextInt(10);
                        String v = value(r, step);
                        id = store.writeAndSnapshot(bb -> bb.put("t0", b(key), b(v)), rank);
                        cur.computeIfAbsent("t0", x -> new TreeMap<>()).put(key, v);
                    }
                    assertFalse(ranks.containsKey(id), "id reused " + id);
                    assertTrue(ranks.isEmpty() || id > Collections.max(ranks.keySet()), "id not increasing " + id);
                    ranks.put(id, rank);
                    snapModel.put(id, copy());
                    for (long gone : new ArrayList<>(snapModel.keySet())) if (!expectedLive().contains(gone)) snapModel.remove(gone);
                }
                if ((k == 5 || k == 7) && !ranks.isEmpty()) {
                    List<Long> live = new ArrayList<>(expectedLive());
                    long id = live.get(r.nextInt(live.size()));
                    int rk = ranks.get(id);
                    if (rk < 3) {
                        int to = rk + 1 + r.nextInt(3 - rk);
                        store.rank(id, to);
                        ranks.put(id, to);
                    }
                }
                if (k == 6) store.checkpoint().join();
                if (step % 50 == 49) {
                    checkAll(store, "step " + step);
                    if (step % 100 == 99) {
                        store.close();
                        store = Varve.open(config(), UnforcedFileIOFactory.INSTANCE);
                        checkAll(store, "reopen " + step);
                    } else {
                        store.halt();
                        store = Varve.open(config(), UnforcedFileIOFactory.INSTANCE);
                        checkAll(store, "halt " + step);
                    }
                }
            }
            checkAll(store, "end");
        } finally {
            store.close();
        }
    }
}
