package dev.varve.engine;

import dev.varve.config.RankTreePolicy;
import dev.varve.config.Retention;
import dev.varve.config.VarveConfig;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.stream.Collectors;

import static org.junit.jupiter.api.Assertions.assertEquals;

/**
 * {@link StoreInspector#snapshots} ({@code varve snapshots}) names the rule that keeps each live snapshot and whether
 * it can never drop. A snapshot is live while any level up to its rank keeps it; the tool named the rule of its rank's
 * own level, so a rank-2 snapshot that level 1's keepAll keeps for ever was shown kept by level 2's keepLast(1) (which
 * did not keep it) and not pinned.
 */
@Timeout(60)
class KeptByTest {
    @TempDir
    Path dir;

    private VarveConfig config(RankTreePolicy policy) {
        return VarveConfig.builder().path(dir).dataRegionSize(16L << 20).partitions(2).checkpointFrequency(Duration.ofHours(1)).retention(policy)
                .checkpointBufferSize(4L << 20).captureBufferSize(1L << 20).walSegmentSize(4L << 20).build();
    }

    private static List<String> shown(Varve store) {
        return StoreInspector.snapshots(store).stream().map(d -> d.id() + " " + d.keptBy() + (d.pinned() ? " pinned" : ""))
                .collect(Collectors.toList());
    }

    @Test
    void theRuleShownIsOneThatKeepsTheSnapshot() {
        try (Varve store = Varve.open(config(RankTreePolicy.levels(Retention.keepAll(), Retention.keepLast(1))))) {
            store.snapshotNow(2);
            store.snapshotNow(2);
            assertEquals(List.of("1 keepAll() pinned", "2 keepAll() pinned"), shown(store), "level 1 keeps every snapshot");
        }
    }

    @Test
    void aSnapshotOutOfItsRanksWindowIsKeptByALowerLevel() {
        try (Varve store = Varve.open(config(RankTreePolicy.levels(Retention.keepLast(3), Retention.keepLast(1), Retention.keepAll())))) {
            store.snapshotNow(2);
            store.snapshotNow(2);
            store.snapshotNow(1);
            store.snapshotNow(3);
            store.snapshotNow(1);
            assertEquals(List.of("3 keepLast(3)", "4 keepAll() pinned", "5 keepLast(3)"), shown(store));
        }
        try (Varve store = Varve.open(config(RankTreePolicy.levels(Retention.keepLast(3), Retention.keepLast(1), Retention.keepAll()).withBudget(1L << 40)))) {
            assertEquals(List.of("3 keepLast(3)", "4 keepAll()", "5 keepLast(3)"), shown(store), "with a budget nothing is pinned");
            store.snapshotNow(2);
            assertEquals(List.of("4 keepAll()", "5 keepLast(3)", "6 keepLast(1)"), shown(store), "the highest level that keeps it");
            store.snapshotNow(2);
            assertEquals(List.of("4 keepAll()", "5 keepLast(3)", "6 keepLast(3)", "7 keepLast(1)"), shown(store),
                    "6 left level 2's window: level 1 keeps it");
        }
    }
}
