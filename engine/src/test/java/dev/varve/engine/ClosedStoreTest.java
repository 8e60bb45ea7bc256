package dev.varve.engine;

import static dev.varve.engine.FixtureSupport.bytes;
import static dev.varve.engine.FixtureSupport.utf8;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.varve.config.VarveConfig;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

/** What a closed store, view or cursor answers: IllegalStateException, whatever else is wrong with the call. */
@Timeout(120)
class ClosedStoreTest {
    @TempDir
    Path dir;

    private VarveConfig config() {
        return FixtureSupport.small(dir).partitions(2).build();
    }

    @Test
    void closeFromSeveralThreadsAtOnceClosesOnceAndReturnsInEveryThread() throws Exception {
        ExecutorService pool = Executors.newFixedThreadPool(4);
        try {
            for (int round = 0; round < 15; round++) {
                Varve store = Varve.open(config());
                Table t = store.table("t");
                for (int i = 0; i < 200; i++) t.put(utf8("k" + i), bytes(round * 1000L + i, 100));
                CountDownLatch go = new CountDownLatch(1);
                List<Future<?>> closers = new ArrayList<>();
                for (int c = 0; c < 3; c++) closers.add(pool.submit(() -> {
                    go.await();
                    store.close(); // documented idempotent: no caller may throw or hang
                    return null;
                }));
                go.countDown();
                for (Future<?> f : closers) f.get();
                try (Varve again = Varve.open(config())) { // the shutdown checkpoint ran once and the locks were released
                    assertEquals(200, FixtureSupport.drain(again.table("t").scan(null, null)).size());
                }
            }
        } finally {
            pool.shutdownNow();
        }
    }

    @Test
    @SuppressWarnings("try") // closes a view inside its try on purpose: close is idempotent
    void closedStoreViewAndCursorsSayClosedBeforeAnythingElse() {
        Varve store = Varve.open(config());
        Table t = store.table("t");
        for (int i = 0; i < 50; i++) t.put(utf8("k" + i), bytes(i, 100));
        long s = store.snapshotNow();
        SnapshotView view = store.asOf(s);
        Cursor live = t.scan(null, null); // a table scan fetches a first batch of every partition as it opens
        Cursor past = view.table("t").scan(null, null);
        assertTrue(live.next() && past.next());

        Table pastT = view.table("t");
        Partition pastP = pastT.partition(0);
        view.close();
        assertThrows(IllegalStateException.class, past::next, "a buffered batch is not served after the view closed");
        assertThrows(IllegalStateException.class, () -> view.table("t"));
        // a write through a closed view says it is closed, as every other call of it (an open one's is unsupported)
        assertThrows(IllegalStateException.class, () -> pastT.put(utf8("k"), utf8("v")));
        assertThrows(IllegalStateException.class, () -> pastT.remove(utf8("k")));
        assertThrows(IllegalStateException.class, () -> pastP.put(utf8("k"), utf8("v")));
        assertThrows(IllegalStateException.class, () -> pastP.remove(utf8("k")));
        assertThrows(IllegalStateException.class, pastP::destroy);
        store.close();
        assertThrows(IllegalStateException.class, live::next, "a buffered batch is not served after the store closed");
        assertThrows(IllegalStateException.class, () -> t.put(null, utf8("v")), "closed, not a null key");
        assertThrows(IllegalStateException.class, () -> t.put(utf8("k"), null), "closed, not a null value");
        assertThrows(IllegalStateException.class, () -> t.get(new byte[100_000]), "closed, not a key too long");
        assertThrows(IllegalStateException.class, () -> t.partition(0));
        try (Varve again = Varve.open(config()); SnapshotView v = again.asOf(s)) {
            Table pastTable = v.table("t");
            v.close();
            assertThrows(IllegalStateException.class, () -> pastTable.partition(0), "a partition of a closed view");
            assertNull(again.table("t").get(utf8("absent")));
        }
    }

    @Test
    void metricsThatReadTheArchiveSayClosedAfterClose() {
        Varve store = Varve.open(config());
        Table t = store.table("t");
        for (int round = 0; round < 5; round++) {
            for (int i = 0; i < 50; i++) t.put(utf8("k" + i), bytes(round * 100 + i, 100));
            store.snapshotNow();
        }
        store.checkpoint().join(); // the captures reach the archive's files
        VarveMetrics m = store.metrics();
        assertTrue(m.archiveDeadBytes() >= 0);
        store.close();
        // the figure is read from the archive's files, closed now: said as a closed store, not as a failed read
        assertThrows(IllegalStateException.class, m::archiveDeadBytes);
        assertTrue(m.walBytesWritten() > 0, "counters kept in memory still answer");
    }

    /** The snapshot and batch calls of a closed store say it is closed before they look at a bad argument. */
    @Test
    void snapshotAndBatchCallsSayClosedBeforeABadArgument() {
        Varve store = Varve.open(config());
        store.close();
        assertThrows(IllegalStateException.class, () -> store.write(null), "closed, not a null batch");
        assertThrows(IllegalStateException.class, () -> store.writeAndSnapshot(null), "closed, not a null batch");
        assertThrows(IllegalStateException.class, () -> store.writeAndSnapshot(null, 1), "closed, not a null batch");
        assertThrows(IllegalStateException.class, () -> store.writeAndSnapshot(b -> { }, 0), "closed, not a bad rank");
        assertThrows(IllegalStateException.class, () -> store.follow(1, null), "closed, not a null listener");
        assertThrows(IllegalStateException.class, () -> store.droppedSnapshots(-1), "closed, not a negative max");
        assertThrows(IllegalStateException.class, () -> store.snapshotNow(0), "closed, not a bad rank");
        assertThrows(IllegalStateException.class, () -> store.rank(-1, 0), "closed, not a bad id or rank");
        assertThrows(IllegalStateException.class, () -> store.asOf(-1), "closed, not an id never declared");
    }
}
