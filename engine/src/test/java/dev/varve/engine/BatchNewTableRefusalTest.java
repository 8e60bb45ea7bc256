package dev.varve.engine;

import dev.varve.config.ConfigLimits;
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
import java.util.concurrent.CyclicBarrier;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.atomic.AtomicReference;

import static dev.varve.engine.FixtureSupport.utf8;
import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * A batch naming a hash-placed table that does not exist yet creates it only if the batch goes through: refused by the
 * write path — its WAL record with a snapshot's rank, a partition at its page limit, the overflow chains it frees —
 * it leaves the store's tables as they were, also after a reopen, and also when another thread's write is what gets
 * it refused.
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

    /**
     * A write that fills a partition the batch puts to runs while the batch's new table is being created (the change
     * feed tells of the creation on the creating thread, so the racing write runs there and then): it must either
     * wait for the batch, which then goes through, or get the batch refused with no table left. The creation used to
     * come after the batch's checks and before its locks, so the racing write went first and the refused batch left
     * the empty table "fresh" behind, in the catalog too.
     */
    @Test
    void aWriteFillingThePartitionAsTheTableIsCreatedLeavesNoTable() throws Exception {
        VarveConfig config = FixtureSupport.small(dir).build();
        byte[] big = filled(200_000, 3);
        AtomicReference<Throwable> batchFailure = new AtomicReference<>();
        AtomicReference<Throwable> racerFailure = new AtomicReference<>();
        try (Varve store = Varve.open(config)) {
            Table t = store.table("t", TableOptions.callerPlaced(1));
            t.partition(0).put(utf8("k"), filled(100, 1));
            PartitionHandle p0 = store.engine().existingTable("t").handles()[0];
            BPlusTree tree = p0.tree;
            long onePut = tree.pagesLeft() - tree.roomAfterPuts(1, big.length);
            TreeSeams.limitPages(tree, (int) (tree.pageCount() + onePut + 10)); // room for one of the two large puts, not both
            assertTrue(tree.roomAfterPuts(1, big.length) >= 0 && tree.roomAfterPuts(2, 2L * big.length) < 0, "set-up: one put fits, two do not");
            Thread racer = new Thread(() -> {
                try {
                    t.partition(0).put(utf8("racer"), big);
                } catch (Throwable e) {
                    racerFailure.set(e);
                }
            }, "racer");
            ChangeFeed feed = store.follow(1, new ChangeListener() {
                @Override
                public void onTableCreated(long lsn, String table, TableOptions options) {
                    if (!table.equals("fresh")) return;
                    racer.start();
                    // the racing write has gone through, or waits for the partition the batch holds
                    while (racer.isAlive() && !p0.lock.hasQueuedThread(racer)) Thread.onSpinWait();
                }

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
                }
            });
            try {
                store.write(b -> b.put("fresh", utf8("k"), filled(10, 2)).put("t", 0, utf8("big"), big));
            } catch (PartitionFullException e) {
                batchFailure.set(e);
            }
            if (racer.getState() != Thread.State.NEW) racer.join();
            feed.close();
            if (batchFailure.get() != null) assertEquals(List.of("t"), store.tables(), "a refused batch left its new table behind: " + batchFailure.get());
            assertEquals(batchFailure.get() == null, racerFailure.get() instanceof PartitionFullException,
                    "one of the two large puts is refused: batch " + batchFailure.get() + ", racing write " + racerFailure.get());
        }
        try (Varve again = Varve.open(config)) {
            if (batchFailure.get() != null) {
                assertEquals(List.of("t"), again.tables(), "nor does the refused batch's table come back at open");
            } else {
                assertArrayEquals(filled(10, 2), again.table("fresh").get(utf8("k")), "the batch that went through kept its table");
                assertArrayEquals(big, again.table("t", TableOptions.callerPlaced(1)).partition(0).get(utf8("big")));
            }
        }
    }

    /**
     * A batch refused while other threads create the same table — by {@code table(name)} and by a batch that goes
     * through — takes nothing of theirs with it: the table they created stays, once, with the other batch's write.
     */
    @Test
    void aRefusedBatchLeavesATableOthersCreateAtTheSameTime() throws Exception {
        VarveConfig config = FixtureSupport.small(dir).build();
        int rounds = 20;
        try (Varve store = Varve.open(config)) {
            store.table("t", TableOptions.callerPlaced(1)).partition(0).put(utf8("k"), filled(100, 1));
            BPlusTree full = store.engine().existingTable("t").handles()[0].tree;
            TreeSeams.limitPages(full, full.pageCount()); // every put to t is refused
            ExecutorService pool = Executors.newFixedThreadPool(3);
            try {
                for (int i = 0; i < rounds; i++) {
                    String name = "n" + i;
                    CyclicBarrier start = new CyclicBarrier(3);
                    Future<?> creator = pool.submit(() -> {
                        start.await();
                        return store.table(name);
                    });
                    Future<?> writer = pool.submit(() -> {
                        start.await();
                        store.write(b -> b.put(name, utf8("w"), filled(10, 5)));
                        return null;
                    });
                    Future<?> refused = pool.submit(() -> {
                        start.await();
                        store.write(b -> b.put(name, utf8("r"), filled(10, 6)).put("t", 0, utf8("big"), filled(200_000, 3)));
                        return null;
                    });
                    creator.get();
                    writer.get();
                    ExecutionException e = assertThrows(ExecutionException.class, refused::get);
                    assertTrue(e.getCause() instanceof PartitionFullException, e.getCause().toString());
                    assertArrayEquals(filled(10, 5), store.table(name).get(utf8("w")), name + " keeps the write of the batch that went through");
                    assertNull(store.table(name).get(utf8("r")), name + " holds nothing of the refused batch");
                }
            } finally {
                pool.shutdownNow();
            }
            assertEquals(rounds + 1, store.tables().size(), store.tables().toString());
        }
        try (Varve again = Varve.open(config)) {
            assertEquals(rounds + 1, again.tables().size(), again.tables().toString());
            for (int i = 0; i < rounds; i++) assertArrayEquals(filled(10, 5), again.table("n" + i).get(utf8("w")), "n" + i + " after a reopen");
        }
    }

    /**
     * A batch whose own pages just fit in half the data region, and with those of the table it creates do not, is
     * refused naming the region: the creation is part of the batch's change now. Into an existing table it goes.
     */
    @Test
    void aBatchThatFitsTheRegionOnlyWithoutItsNewTableIsRefused() {
        VarveConfig config = FixtureSupport.small(dir).build();
        Varve store = Varve.open(config);
        store.table("t");
        int ops = 0;
        while (store.engine().memory.headroomFor(6L * (ops + 1), ops + 1) <= store.engine().memory.maxHeadroom()) ops++;
        int n = ops;
        assertTrue(store.engine().memory.headroomFor(6L * n, n) + ConfigLimits.tableCreationPages(config.partitions()) > store.engine().memory.maxHeadroom(),
                "set-up: the creation's pages tip the batch over");
        store.write(b -> {
            for (int i = 0; i < n; i++) b.put("t", utf8(String.format("%05d", i)), new byte[1]);
        });
        assertEquals(n, count(store.table("t")), "into an existing table the batch fits");
        refusedLeavesNoTable(config, store, IllegalArgumentException.class, () -> store.write(b -> {
            for (int i = 0; i < n; i++) b.put("fresh", utf8(String.format("%05d", i)), new byte[1]);
        }), "dataRegionSize");
    }

    private static int count(Table t) {
        int n = 0;
        try (Cursor c = t.scan(new byte[0], new byte[]{(byte) 0xff})) {
            while (c.next()) n++;
        }
        return n;
    }
}
