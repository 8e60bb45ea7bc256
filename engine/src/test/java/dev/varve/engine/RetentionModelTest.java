package dev.varve.engine;

import dev.varve.config.RankTreePolicy;
import dev.varve.config.Retention;
import dev.varve.config.VarveConfig;
import dev.varve.core.io.UnforcedFileIOFactory;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Random;
import java.util.TreeMap;
import java.util.TreeSet;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * Random rank-tree policies of keepLast and keepAll rules (keepAll at any level, not only the top), random declarations
 * and raises (to the same rank too), against a model of the policy read literally: a snapshot lives while some level
 * up to its rank keeps it. After each step the live snapshots and their ranks are the model's, each reads what it held,
 * the tool names a rule that keeps each and pins exactly those a keepAll level keeps; a refused raise (lower, over the
 * levels, dropped, never declared) changes nothing; a reopen keeps it all.
 */
@Timeout(120)
class RetentionModelTest {
    private static final byte[] KEY = "v".getBytes(StandardCharsets.UTF_8);
    @TempDir
    Path dir;

    private final Map<Long, Integer> ranks = new TreeMap<>(); // every snapshot declared, with its rank (frozen once dropped)
    private final Map<Long, Integer> values = new TreeMap<>();
    private final TreeSet<Long> live = new TreeSet<>();
    private Retention[] rules;

    @ParameterizedTest
    @ValueSource(longs = {1, 2, 3, 4, 5, 6})
    void theLiveSnapshotsAreThoseThePolicyKeeps(long seed) {
        Random rnd = new Random(seed);
        rules = new Retention[1 + rnd.nextInt(4)];
        for (int j = 0; j < rules.length; j++) rules[j] = rnd.nextInt(4) == 0 ? Retention.keepAll() : Retention.keepLast(1 + rnd.nextInt(4));
        VarveConfig config = VarveConfig.builder().path(dir).dataRegionSize(16L << 20).partitions(2).checkpointFrequency(Duration.ofHours(1))
                .checkpointBufferSize(1L << 20).captureBufferSize(1L << 20).walSegmentSize(4L << 20).snapshotPageWindow(2).retention(RankTreePolicy.levels(rules)).build();
        Varve store = Varve.open(config, UnforcedFileIOFactory.INSTANCE);
        try {
            for (int step = 0; step < 60; step++) {
                int op = rnd.nextInt(10);
                if (op < 6 || live.isEmpty()) {
                    store.table("t").put(KEY, Integer.toString(step).getBytes(StandardCharsets.UTF_8));
                    int rank = 1 + rnd.nextInt(rules.length);
                    long id = store.snapshotNow(rank);
                    ranks.put(id, rank);
                    values.put(id, step);
                    live.add(id);
                } else if (op < 8) {
                    long id = new ArrayList<>(live).get(rnd.nextInt(live.size()));
                    int rank = ranks.get(id) + rnd.nextInt(rules.length - ranks.get(id) + 1); // the same one, sometimes
                    store.rank(id, rank);
                    ranks.put(id, rank);
                } else {
                    refusedRaises(store, rnd);
                }
                settle();
                check(store, "seed " + seed + " step " + step + " policy " + List.of(rules));
                if (step == 30) {
                    store.close();
                    store = Varve.open(config, UnforcedFileIOFactory.INSTANCE);
                    check(store, "seed " + seed + " after a reopen");
                }
            }
        } finally {
            store.close();
        }
    }

    /** Raises the store must refuse, each changing nothing. */
    private void refusedRaises(Varve store, Random rnd) {
        long id = live.isEmpty() ? 1 : live.last();
        if (ranks.get(id) > 1) assertThrows(IllegalArgumentException.class, () -> store.rank(id, ranks.get(id) - 1));
        assertThrows(IllegalArgumentException.class, () -> store.rank(id, rules.length + 1));
        long latest = ranks.isEmpty() ? 0 : ((TreeMap<Long, Integer>) ranks).lastKey();
        assertThrows(SnapshotNotFoundException.class, () -> store.rank(latest + 1 + rnd.nextInt(3), 1));
        ranks.keySet().stream().filter(s -> !live.contains(s)).findAny()
                .ifPresent(dropped -> assertThrows(SnapshotNotFoundException.class, () -> store.rank(dropped, rules.length)));
    }

    /** The model: drops what no level up to a snapshot's rank keeps. */
    private void settle() {
        live.removeIf(s -> keptAt(s).isEmpty());
    }

    /** The levels up to its rank that keep {@code s}: keepAll, or keepLast(n) with s among the n newest counted there. */
    private List<Integer> keptAt(long s) {
        List<Integer> levels = new ArrayList<>();
        for (int j = 1; j <= ranks.get(s); j++) {
            Retention rule = rules[j - 1];
            if (rule.kind() == Retention.Kind.ALL) {
                levels.add(j);
                continue;
            }
            int level = j;
            long newer = ranks.entrySet().stream().filter(e -> e.getKey() > s && e.getValue() >= level).count();
            if (newer < rule.count()) levels.add(j);
        }
        return levels;
    }

    private void check(Varve store, String when) {
        List<Long> ids = new ArrayList<>();
        for (SnapshotInfo info : store.snapshots()) {
            ids.add(info.id());
            assertEquals(ranks.get(info.id()), info.rank(), when + ": rank of " + info.id());
        }
        assertEquals(new ArrayList<>(live), ids, when);
        for (long s : live) {
            try (SnapshotView v = store.asOf(s)) {
                assertArrayEquals(Integer.toString(values.get(s)).getBytes(StandardCharsets.UTF_8), v.table("t").get(KEY), when + ": snapshot " + s);
            }
        }
        for (StoreInspector.SnapshotDetail d : StoreInspector.snapshots(store)) {
            List<Integer> keeping = keptAt(d.id());
            boolean pinned = keeping.stream().anyMatch(j -> rules[j - 1].kind() == Retention.Kind.ALL);
            assertEquals(pinned, d.pinned(), when + ": snapshot " + d.id() + " pinned");
            assertTrue(keeping.stream().anyMatch(j -> rules[j - 1].toString().equals(d.keptBy())), when + ": snapshot " + d.id() + " kept by " + d.keptBy()
                    + ", the model's levels keeping it " + keeping);
        }
        ranks.keySet().stream().filter(s -> !live.contains(s)).forEach(s -> assertThrows(SnapshotNotFoundException.class, () -> store.asOf(s).close()));
    }
}
