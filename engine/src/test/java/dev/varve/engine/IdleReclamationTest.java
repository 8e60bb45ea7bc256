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
