package dev.varve.engine;

import dev.varve.config.VarveConfig;
import dev.varve.core.io.PartitionFullException;
import dev.varve.core.tree.BPlusTree;
import dev.varve.core.tree.TreeSeams;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.function.Executable;
import org.junit.jupiter.api.io.TempDir;

import java.nio.file.Path;
import java.util.Arrays;
import java.util.List;

import static dev.varve.engine.FixtureSupport.utf8;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * A batch naming a hash-placed table that does not exist yet creates it only if the batch goes through: refused by the
 * write path — its WAL record with a snapshot's rank, a partition at its page limit, the overflow chains it frees —
 * it leaves the store's tables as they were, also after a reopen.
 */
@Timeout(120)
class BatchNewTableRefusalTest {
    private static final int MIB = 1 << 20;

    @TempDir
    Path dir;

    private static byte[] filled(int length, int seed) {
        byte[] v = new byte[length];
        Arrays.fill(v, (byte) seed);
        return v;
    }

    /** Runs a batch that must be refused with {@code type}, and checks the store still holds just table t. */
    private static void refusedLeavesNoTable(VarveConfig config, Varve store, Class<? extends Throwable> type, Executable batch, String says) {
        Throwable e = assertThrows(type, batch);
        assertTrue(e.getMessage().contains(says), e.getMessage());
        assertEquals(List.of("t"), store.tables(), "the refused batch created no table");
        store.close();
        try (Varve again = Varve.open(config)) {
            assertEquals(List.of("t"), again.tables(), "nor does one come back at open");
        }
    }

    /** The batch's record with the snapshot's rank is 4 bytes over the WAL's limit, the operations alone are not. */
    @Test
    void aBatchAndSnapshotOverTheWalRecordLimitCreatesNoTable() {
        VarveConfig config = FixtureSupport.small(dir).dataRegionSize(32L << 20).build();
        Varve store = Varve.open(config);
        store.table("t");
        int target = store.engine().wal.maxPayloadBytes() - 2; // a batch of this many bytes fits; with a rank it does not
        int overhead = LogicalRecords.FIRST_OP + 4 * (1 + 4 + 4 + 2 + 4); // four puts of two-byte keys
        int last = target - overhead - 3 * BPlusTree.MAX_VALUE_BYTES;
        assertTrue(last > 0 && last <= BPlusTree.MAX_VALUE_BYTES, "last value " + last);
        refusedLeavesNoTable(config, store, IllegalArgumentException.class, () -> store.writeAndSnapshot(b -> {
            for (int i = 0; i < 3; i++) b.put("fresh", utf8("k" + i), filled(BPlusTree.MAX_VALUE_BYTES, i));
            b.put("fresh", utf8("k3"), filled(last, 3));
        }), "WAL record limit");
    }

    @Test
    void aBatchRefusedAtAPartitionsPageLimitCreatesNoTable() {
        VarveConfig config = FixtureSupport.small(dir).build();
        Varve store = Varve.open(config);
        Table t = store.table("t", TableOptions.callerPlaced(1));
        t.partition(0).put(utf8("k"), filled(100, 1));
        BPlusTree full = store.engine().existingTable("t").handles()[0].tree;
        TreeSeams.limitPages(full, full.pageCount() + 40);
        refusedLeavesNoTable(config, store, PartitionFullException.class,
                () -> store.write(b -> b.put("fresh", utf8("k"), filled(10, 2)).put("t", 0, utf8("big"), filled(200_000, 3))),
                "partition 0 of table t");
    }

    @Test
    void aBatchFreeingMoreThanTheRegionTakesCreatesNoTable() throws Exception {
        VarveConfig config = FixtureSupport.small(dir).build(); // 8 MiB: five 1 MiB values removed are too many
        Varve store = Varve.open(config);
        Table t = store.table("t");
        for (int i = 0; i < 5; i++) t.put(utf8("big-" + i), filled(MIB, i));
        store.checkpoint().get();
        refusedLeavesNoTable(config, store, IllegalArgumentException.class, () -> store.write(b -> {
            b.put("fresh", utf8("k"), filled(10, 2));
            for (int i = 0; i < 5; i++) b.remove("t", utf8("big-" + i));
        }), "dataRegionSize");
    }
}
