package dev.varve.engine;

import dev.varve.config.RankTreePolicy;
import dev.varve.config.Retention;
import dev.varve.config.VarveConfig;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;

import static org.junit.jupiter.api.Assertions.assertEquals;

/**
 * {@code rank(id, r)} with {@code r} the snapshot's rank is accepted and, as documented, changes nothing: it logged a
 * rank record all the same, so followers were told of a raise that raised nothing and the snapshot's WAL LSN (the
 * tool's "declaration or latest raise") moved to it.
 */
@Timeout(60)
class SameRankRaiseTest {
    @TempDir
    Path dir;

    @Test
    void aRaiseToTheSameRankChangesNothing() {
        VarveConfig config = VarveConfig.builder().path(dir).dataRegionSize(16L << 20).partitions(2).checkpointFrequency(Duration.ofHours(1))
                .retention(RankTreePolicy.levels(Retention.keepLast(4), Retention.keepAll()))
                .checkpointBufferSize(4L << 20).captureBufferSize(1L << 20).walSegmentSize(4L << 20).build();
        List<String> told = new ArrayList<>();
        try (Varve store = Varve.open(config)) {
            long s = store.snapshotNow(2);
            try (ChangeFeed feed = store.follow(1, new ChangeListener() {
                @Override
                public void onWrite(long lsn, List<Change> changes) {
                }

                @Override
                public void onPartitionDestroyed(long lsn, String table, int partition) {
                }

                @Override
                public void onSnapshot(long lsn, long id, int rank) {
                }

                @Override
                public void onRank(long lsn, long id, int rank) {
                    told.add(id + "->" + rank);
                }
            })) {
                List<StoreInspector.SnapshotDetail> before = StoreInspector.snapshots(store);
                List<SnapshotInfo> infoBefore = store.snapshots();
                store.rank(s, 2);
                store.rank(feed.snapshot(), 1);
                assertEquals(infoBefore, store.snapshots());
                assertEquals(before, StoreInspector.snapshots(store), "the snapshots' WAL LSNs stay those of their declarations");
                assertEquals(List.of(), told, "no raise to tell followers of");
                store.rank(s, 2); // still accepted
            }
        }
    }
}
