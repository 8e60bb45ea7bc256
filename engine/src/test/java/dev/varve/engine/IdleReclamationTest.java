package dev.varve.engine;

import dev.varve.config.RankTreePolicy;
import dev.varve.config.Retention;
import dev.varve.config.VarveConfig;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.time.Duration;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * What the policy drops while a store writes nothing — a keepFor rule ageing, a byte budget over its size — is given
 * back without new writes: by the next checkpoint, which finds nothing to write but still reclaims, and by the next
 * open, which reclaims what the last run dropped and did not get to. (A budget store that stopped writing used to drop
 * more of its oldest snapshots at every open and checkpoint while its archive kept every byte.)
 */
@Timeout(120)
class IdleReclamationTest {
    @TempDir
    Path dir;

    private VarveConfig config() {
        return VarveConfig.builder().path(dir).dataRegionSize(16L << 20).partitions(2).checkpointFrequency(Duration.ofHours(1))
                .archiveSegmentSize(256L << 10).retention(RankTreePolicy.levels(Retention.keepFor(Duration.ofMillis(300)))).build();
    }

    /** Archives a few MB of history, checkpoints, then waits, writing nothing, until the keepFor rule dropped it. */
    private static void writeThenAge(Varve store) throws InterruptedException {
        for (int i = 0; i < 3000; i++) {
            byte[] key = ("k" + i % 500).getBytes(StandardCharsets.UTF_8);
            store.writeAndSnapshot(b -> b.put("t", key, new byte[200]));
        }
        store.checkpoint().join(); // the history lies below this mark: the next reclamation may take all of it
        store.checkpoint().join(); // the first wrote a WAL record after its mark; this one writes none: the store is idle
        while (store.snapshots().size() > 1) Thread.sleep(50); // the archiver ages the rule
    }

    @Test
    void aCheckpointWithNothingToWriteGivesBackWhatAgedOut() throws InterruptedException {
        try (Varve store = Varve.open(config())) {
            writeThenAge(store);
            long before = store.metrics().archiveBytes();
            long reclaimed = store.metrics().archiveBytesReclaimed();
            store.checkpoint().join(); // nothing written since the last one
            long after = store.metrics().archiveBytes();
            assertTrue(store.metrics().archiveBytesReclaimed() > reclaimed && after < before / 4,
                    "archive " + before + " -> " + after + " bytes after an idle checkpoint, reclaimed " + reclaimed + " -> "
                            + store.metrics().archiveBytesReclaimed());
        }
    }

    /**
     * I8 across the new reclamation points: a rank-2 snapshot taken mid-history, kept by the policy's second level,
     * still reads exactly what it held after an idle checkpoint reclaimed what its neighbours left, and after a crash
     * and the open that reclaims again; no live mapping reaches reclaimed data.
     */
    @Test
    void whatAKeptSnapshotNeedsSurvivesIdleAndOpenReclamation() throws InterruptedException {
        VarveConfig config = config().toBuilder().retention(RankTreePolicy.levels(Retention.keepFor(Duration.ofMillis(300)), Retention.keepAll()))
                .build();
        java.util.Map<String, Integer> model = new java.util.TreeMap<>();
        long kept = 0;
        Varve store = Varve.open(config);
        for (int i = 0; i < 3000; i++) {
            String k = "k" + i % 500;
            byte[] value = java.nio.ByteBuffer.allocate(200).putInt(0, i).array();
            if (i == 1500) kept = store.writeAndSnapshot(b -> b.put("t", k.getBytes(StandardCharsets.UTF_8), value), 2);
            else store.writeAndSnapshot(b -> b.put("t", k.getBytes(StandardCharsets.UTF_8), value));
            if (i <= 1500) model.put(k, i);
        }
        store.checkpoint().join();
        store.checkpoint().join(); // idle from here on
        while (store.snapshots().size() > 2) Thread.sleep(50); // the rank-2 snapshot and the latest stay
        long reclaimed = store.metrics().archiveBytesReclaimed();
        store.checkpoint().join();
        assertTrue(store.metrics().archiveBytesReclaimed() > reclaimed, "the idle checkpoint reclaimed nothing");
        assertReads(store, kept, model);
        store.halt();
        try (Varve reopened = Varve.open(config)) {
            assertReads(reopened, kept, model);
        }
    }

    private static void assertReads(Varve store, long snapshot, java.util.Map<String, Integer> model) {
        assertEquals(java.util.List.of(), store.danglingArchiveMappings(), "I8");
        try (SnapshotView v = store.asOf(snapshot)) {
            for (java.util.Map.Entry<String, Integer> e : model.entrySet())
                assertEquals(e.getValue(), java.nio.ByteBuffer.wrap(v.table("t").get(e.getKey().getBytes(StandardCharsets.UTF_8))).getInt(0),
                        "snapshot " + snapshot + ", " + e.getKey());
        }
    }

    @Test
    void openGivesBackWhatTheLastRunDroppedAndDidNotReclaim() throws InterruptedException {
        Varve store = Varve.open(config());
        writeThenAge(store);
        long before = store.metrics().archiveBytes();
        store.halt(); // no shutdown checkpoint: the drops stand, their bytes unreclaimed
        try (Varve reopened = Varve.open(config())) {
            long after = reopened.metrics().archiveBytes();
            assertTrue(after < before / 4, "archive " + before + " bytes before the crash, " + after + " after open");
        }
    }
}
