package dev.varve.engine;

import dev.varve.config.RecoveryMode;
import dev.varve.config.VarveConfig;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.EnumSource;

import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.util.Map;
import java.util.SplittableRandom;
import java.util.TreeMap;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * Diff capture through the public API: a hot key set with a snapshot after every batch archives most pre-states as
 * diffs on chains up to the bound, while checkpoints run every 40 ms; after a crash (nothing flushed since the last
 * checkpoint: recovery cuts the archive back to the mark and replay captures again, with fresh pages) every
 * snapshot reads back its model exactly, in both recovery modes. And the archive a diff-captured history takes is
 * a fraction of the whole-page one.
 */
@Timeout(300)
class DiffCaptureTest {
    private static final int KEYS = 400;
    private static final int BATCHES = 500;

    @TempDir
    Path dir;

    @ParameterizedTest
    @EnumSource(RecoveryMode.class)
    void everySnapshotReadsBackExactlyAfterACrash(RecoveryMode mode) {
        everySnapshotReadsBackAfterACrash(mode, 3); // short chains: every length, often
    }

    /** The same with chains to 20: the versions at positions 8 and 16 are skip links, diffs against the version 8 back. */
    @ParameterizedTest
    @EnumSource(RecoveryMode.class)
    void everySnapshotReadsBackExactlyAfterACrashWithSkipLinks(RecoveryMode mode) {
        everySnapshotReadsBackAfterACrash(mode, 20);
    }

    private void everySnapshotReadsBackAfterACrash(RecoveryMode mode, int chain) {
        VarveConfig config = SnapshotTest.config(dir, mode).toBuilder().snapshotDiffChain(chain).build();
        TreeMap<Long, Map<String, String>> models = new TreeMap<>();
        Varve store = Varve.open(config);
        write(store, new SplittableRandom(mode.ordinal()), models);
        checkAll(store, models);
        store.halt();
        try (Varve reopened = Varve.open(config)) {
            checkAll(reopened, models);
        }
    }

    @Test
    void aDiffCapturedHistoryTakesAFractionOfTheWholePageOne() {
        long[] bytes = new long[2];
        int[] chains = {VarveConfig.builder().path(dir)
                .dataRegionSize(32L << 20).checkpointBufferSize(4L << 20).walSegmentSize(4L << 20).build().snapshotDiffChain(), 0};
        for (int i = 0; i < 2; i++) {
            VarveConfig config = SnapshotTest.config(dir.resolve("chain-" + chains[i]), RecoveryMode.CHECKPOINT_RECOVERY_FILE).toBuilder()
                    .snapshotDiffChain(chains[i]).build();
            try (Varve store = Varve.open(config)) {
                write(store, new SplittableRandom(7), new TreeMap<>());
                store.checkpoint().join();
                bytes[i] = store.metrics().archiveBytes();
            }
        }
        System.out.printf("archive after %d snapshots of 5-put batches: %,d bytes with diff capture (chain %d), %,d with whole pages%n", BATCHES, bytes[0],
                chains[0], bytes[1]);
        assertTrue(bytes[0] * 3 < bytes[1], "diffs take less than a third: " + bytes[0] + " vs " + bytes[1]);
    }

    /** Batches of 5 overwrites of random hot keys, each with a snapshot in the same commit; models every snapshot. */
    private static void write(Varve store, SplittableRandom random, TreeMap<Long, Map<String, String>> models) {
        Map<String, String> model = new TreeMap<>();
        for (int b = 0; b < BATCHES; b++) {
            Map<String, String> batch = new TreeMap<>();
            for (int i = 0; i < 5; i++) batch.put(key(random.nextInt(KEYS)), "value " + b + "." + i + " " + "x".repeat(random.nextInt(80)));
            long id = store.writeAndSnapshot(w -> batch.forEach((k, v) -> w.put("t", bytes(k), bytes(v))));
            model.putAll(batch);
            models.put(id, new TreeMap<>(model));
        }
    }

    private static void checkAll(Varve store, TreeMap<Long, Map<String, String>> models) {
        for (Map.Entry<Long, Map<String, String>> m : models.entrySet()) {
            try (SnapshotView view = store.asOf(m.getKey())) {
                assertEquals(m.getValue(), contents(view.table("t")), "snapshot " + m.getKey());
            }
        }
        assertEquals(models.lastEntry().getValue(), contents(store.table("t")), "the current state");
    }

    /** A table's entries as strings, in key order. */
    static Map<String, String> contents(Table t) {
        Map<String, String> out = new TreeMap<>();
        try (Cursor c = t.scan(null, null)) {
            while (c.next()) out.put(new String(c.key(), StandardCharsets.UTF_8), new String(c.value(), StandardCharsets.UTF_8));
        }
        return out;
    }

    private static String key(int k) {
        return String.format("key-%05d", k);
    }

    static byte[] bytes(String s) {
        return s.getBytes(StandardCharsets.UTF_8);
    }
}
