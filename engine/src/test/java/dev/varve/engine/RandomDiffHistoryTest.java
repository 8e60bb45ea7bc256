package dev.varve.engine;

import dev.varve.config.RankTreePolicy;
import dev.varve.config.RecoveryMode;
import dev.varve.config.Retention;
import dev.varve.config.VarveConfig;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

import java.nio.file.Path;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.SplittableRandom;
import java.util.TreeMap;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * Diff-based history against a model, where chains meet their edges: the smallest Pagelog segments (chains restart
 * whole in each, often in the middle of an archiver batch), the diff chain bound picked again at every reopen (0, 1,
 * 2, 63), values written and then set back to what they were (chunks that change and change back), removes and
 * large values (overflow pages allocated and freed between two captures), retention dropping snapshots (so whole
 * segments are reclaimed under live chains), raises (lazy ranking copies a snapshot's pages into a rank level), and
 * crashes (recovery cuts the archive back to the checkpoint's mark and replay captures again). Every live snapshot
 * reads back its model exactly, twice (the second time through the pages the chains rebuilt and kept).
 */
@Timeout(300)
class RandomDiffHistoryTest {
    private static final int KEYS = 300;
    private static final int EPOCHS = 6;
    private static final int BATCHES = 70;
    private static final int[] CHAINS = {0, 1, 2, 63};

    @TempDir
    Path dir;

    @ParameterizedTest
    @ValueSource(longs = {1, 2, 3, 4})
    void everyLiveSnapshotReadsBackItsModel(long seed) {
        SplittableRandom random = new SplittableRandom(seed);
        Map<Long, Map<String, String>> models = new HashMap<>();
        Map<String, String> model = new TreeMap<>();
        Map<String, String> previous = new HashMap<>(); // each key's value before its latest put: what a put sets back
        long reclaimed = 0;
        long copied = 0;
        Varve store = Varve.open(config(random));
        try {
            for (int epoch = 0; epoch < EPOCHS; epoch++) {
                for (int b = 0; b < BATCHES; b++) {
                    Map<String, String> puts = new TreeMap<>();
                    List<String> removes = new ArrayList<>();
                    for (int i = 1 + random.nextInt(6); i > 0; i--) {
                        String key = key(random.nextInt(KEYS));
                        int kind = random.nextInt(20);
                        if (kind < 3) removes.add(key);
                        else if (kind < 7 && previous.containsKey(key)) puts.put(key, previous.get(key)); // changed back
                        else if (kind == 7) puts.put(key, "big " + b + " " + "y".repeat(2000 + random.nextInt(6000))); // overflow pages
                        else puts.put(key, "value " + epoch + "." + b + "." + i + " " + "x".repeat(random.nextInt(90)));
                    }
                    removes.removeAll(puts.keySet());
                    int rank = random.nextInt(10) == 0 ? 2 + random.nextInt(2) : 1;
                    long id = store.writeAndSnapshot(w -> {
                        puts.forEach((k, v) -> w.put("t", DiffCaptureTest.bytes(k), DiffCaptureTest.bytes(v)));
                        removes.forEach(k -> w.remove("t", DiffCaptureTest.bytes(k)));
                    }, rank);
                    puts.forEach((k, v) -> {
                        String was = model.put(k, v);
                        if (was != null) previous.put(k, was);
                    });
                    removes.forEach(k -> {
                        String was = model.remove(k);
                        if (was != null) previous.put(k, was);
                    });
                    models.put(id, new TreeMap<>(model));
                    if (random.nextInt(15) == 0) raiseOne(store, random);
                    if (random.nextInt(25) == 0) store.checkpoint().join();
                    if (random.nextInt(20) == 0) checkLive(store, models, "seed " + seed + ", epoch " + epoch + ", batch " + b);
                }
                checkLive(store, models, "seed " + seed + ", end of epoch " + epoch);
                reclaimed += store.metrics().archiveBytesReclaimed();
                copied += store.metrics().archiveBytesCopiedByRanking();
                if (random.nextBoolean()) store.halt(); // a crash: recovery cuts the archive to the mark and replays
                else store.close();
                store = Varve.open(config(random));
                checkLive(store, models, "seed " + seed + ", reopened after epoch " + epoch);
            }
        } finally {
            store.close();
        }
        assertTrue(reclaimed > 0, "retention reclaimed segments under live chains");
        assertTrue(copied > 0, "lazy ranking copied raised snapshots");
    }

    /** A small store whose archive switches segments often, with the diff chain bound {@code random} picks. */
    private VarveConfig config(SplittableRandom random) {
        return SnapshotTest.config(dir, RecoveryMode.CHECKPOINT_RECOVERY_FILE).toBuilder()
                .archiveSegmentSize(256L << 10) // the smallest: 62 records
                .snapshotDiffChain(CHAINS[random.nextInt(CHAINS.length)])
                .snapshotPageWindow(2)
                .retention(RankTreePolicy.levels(Retention.keepLast(12), Retention.keepLast(4), Retention.keepAll()))
                .build();
    }

    /** Raises a random live snapshot by one rank, when it can go higher: lazy ranking copies it once out of the window. */
    private static void raiseOne(Varve store, SplittableRandom random) {
        List<SnapshotInfo> live = store.snapshots();
        SnapshotInfo s = live.get(random.nextInt(live.size()));
        if (s.rank() < 3) store.rank(s.id(), s.rank() + 1);
    }

    /** Every live snapshot reads back its model, twice. */
    private static void checkLive(Varve store, Map<Long, Map<String, String>> models, String when) {
        List<SnapshotInfo> live = store.snapshots();
        assertTrue(live.size() > 0, when);
        for (SnapshotInfo s : live) {
            Map<String, String> expected = models.get(s.id());
            assertTrue(expected != null, "snapshot " + s.id() + " was declared by the test, " + when);
            for (int round = 0; round < 2; round++) {
                try (SnapshotView view = store.asOf(s.id())) {
                    assertEquals(expected, DiffCaptureTest.contents(view.table("t")), "snapshot " + s.id() + " (rank " + s.rank() + "), " + when);
                }
            }
        }
    }

    private static String key(int k) {
        return String.format("key-%05d", k);
    }
}
