package dev.varve.snapshot;

import dev.varve.config.RankTreePolicy;
import dev.varve.config.Retention;
import dev.varve.core.io.FileIOFactory;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

import java.nio.file.Path;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * Drops beyond the in-memory window are still explained, from the drop log; live ones and unknown ids are not; and
 * the declarations held in memory follow the live snapshots, not every snapshot ever declared.
 */
@Timeout(180)
class SnapshotRegistryTest {
    @TempDir
    Path dir;

    @Test
    void oldDropsAreFoundInTheDropLog() {
        try (SnapshotRegistry r = new SnapshotRegistry(FileIOFactory.standard(), dir, RankTreePolicy.levels(Retention.keepLast(2)), 64)) {
            r.prepare(0, true, ArchiveMarks.Mark.none(1));
            r.cut();
            for (long id = 1; id <= 6000; id++) r.declare(id, 1, 1000 + id, id, level -> 0);
            assertEquals(2, r.live().size());
            DroppedSnapshot first = r.dropped(1); // dropped 5,997 drops ago: no longer in memory
            assertNotNull(first, "snapshot 1 was dropped and says so");
            assertTrue(first.why().contains("rank 1"), first.why());
            assertNotNull(r.dropped(5998), "a recent drop");
            assertNull(r.dropped(6000), "a live snapshot is not dropped");
            assertNull(r.dropped(6001), "a snapshot never declared is not dropped");
            assertTrue(r.remembered() <= 3 * 2, "declarations kept in memory follow the live ones, not the 6,000 declared: " + r.remembered());
        }
    }
}
