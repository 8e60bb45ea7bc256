package dev.varve.engine;

import dev.varve.config.VarveConfig;
import dev.varve.core.io.PartitionFullException;
import dev.varve.core.tree.BPlusTree;
import dev.varve.core.tree.TreeSeams;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

import java.nio.file.Path;
import java.util.Arrays;

import static dev.varve.engine.FixtureSupport.utf8;
import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * A partition at its page limit ({@link BPlusTree#MAX_PAGES}, lowered here through the tree's test seam): a write that
 * may need more pages than it has left is refused before anything is logged, as a {@link PartitionFullException}
 * naming the partition, its table and the limit. The store goes on — reads, the other partitions, writes that fit —
 * and the refused write is not there after a reopen.
 */
@Timeout(120)
class PartitionFullTest {
    @TempDir
    Path dir;

    private static byte[] filled(int length, int seed) {
        byte[] v = new byte[length];
        Arrays.fill(v, (byte) seed);
        return v;
    }

    @Test
    void aWriteThatMayPassThePageLimitIsRefusedAndChangesNothing() {
        VarveConfig config = FixtureSupport.small(dir).build();
        byte[] large = filled(200_000, 7); // about fifty overflow pages
        try (Varve store = Varve.open(config)) {
            Table t = store.table("t", TableOptions.callerPlaced(2));
            for (int i = 0; i < 50; i++) {
                t.partition(0).put(utf8("k" + i), filled(100, i));
                t.partition(1).put(utf8("k" + i), filled(100, i));
            }
            BPlusTree full = store.engine().existingTable("t").handles()[0].tree;
            int limit = full.pageCount() + 40;
            TreeSeams.limitPages(full, limit);
            int pagesBefore = full.pageCount();

            PartitionFullException e = assertThrows(PartitionFullException.class, () -> t.partition(0).put(utf8("big"), large));
            assertTrue(e.getMessage().contains("partition 0 of table t"), e.getMessage());
            assertTrue(e.getMessage().contains(String.valueOf(limit)), e.getMessage());
            PartitionFullException batch = assertThrows(PartitionFullException.class,
                    () -> store.write(b -> b.put("t", 1, utf8("with-big"), filled(10, 1)).put("t", 0, utf8("big"), large)));
            assertTrue(batch.getMessage().contains("partition 0 of table t"), batch.getMessage());

            assertEquals(pagesBefore, full.pageCount());
            assertNull(t.partition(0).get(utf8("big")));
            assertNull(t.partition(1).get(utf8("with-big")));
            assertArrayEquals(filled(100, 3), t.partition(0).get(utf8("k3")));
            t.partition(0).put(utf8("small"), filled(10, 2)); // what fits goes on, in that partition and the others
            t.partition(1).put(utf8("big"), large);
            assertTrue(t.partition(0).remove(utf8("k4")));
        }
        try (Varve store = Varve.open(config)) { // nothing of the refused writes was logged
            Table t = store.table("t", TableOptions.callerPlaced(2));
            assertNull(t.partition(0).get(utf8("big")));
            assertNull(t.partition(1).get(utf8("with-big")));
            assertArrayEquals(filled(10, 2), t.partition(0).get(utf8("small")));
            assertArrayEquals(large, t.partition(1).get(utf8("big")));
            assertNull(t.partition(0).get(utf8("k4")));
            t.partition(0).put(utf8("big"), large); // the limit is back to 2^31 - 1
            assertArrayEquals(large, t.partition(0).get(utf8("big")));
        }
        StoreVerifier.Report report = StoreVerifier.verify(config);
        assertTrue(report.damage().isEmpty() && report.unusable() == null, "verify: " + report.damage() + " " + report.unusable());
    }
}
