package dev.varve.engine;

import dev.varve.config.VarveConfig;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;

import static org.junit.jupiter.api.Assertions.*;

/** Cursors as a caller holds them: across their own key arrays being reused, store and view closes, destroys, checkpoints. */
@Timeout(120)
class CursorLifecycleTest {
    @TempDir
    Path dir;

    VarveConfig config() {
        return VarveConfig.builder().path(dir).pageSize(1024).dataRegionSize(16L << 20).partitions(3)
                .checkpointBufferSize(4L << 20).captureBufferSize(1L << 20).walSegmentSize(4L << 20).build();
    }

    static byte[] key(int i) {
        return String.format("k%05d", i).getBytes(StandardCharsets.UTF_8);
    }

    static int firstDifference(List<String> a, List<String> b) {
        int i = 0;
        while (i < a.size() && a.get(i).equals(b.get(i))) i++;
        return i;
    }

    @Test
    void aCallerScribblingOnReturnedKeysStillGetsEveryKeyOnce() {
        try (Varve store = Varve.open(config())) {
            Table t = store.table("t");
            for (int i = 0; i < 2000; i++) t.put(key(i), key(i));
            long snap = store.snapshotNow();
            try (SnapshotView v = store.asOf(snap)) {
                for (Cursor c : List.of(t.scan(null, null), t.partition(1).scan(null, null), v.table("t").scan(null, null))) {
                    List<String> seen = new ArrayList<>();
                    try (c) {
                        while (c.next() && seen.size() <= 2000) { // bounded: a cursor that restarts would never end
                            byte[] k = c.key();
                            seen.add(new String(k, StandardCharsets.UTF_8));
                            Arrays.fill(k, (byte) 0); // the caller reuses the array it was handed
                            Arrays.fill(c.value(), (byte) 0);
                        }
                    }
                    List<String> sorted = new ArrayList<>(seen);
                    sorted.sort(null);
                    assertTrue(sorted.equals(seen), "keys out of order, from #" + firstDifference(sorted, seen));
                    assertEquals(seen.size(), seen.stream().distinct().count(), "a key came twice");
                    assertTrue(seen.size() == 2000 || seen.size() > 500 && seen.size() < 1000, seen.size() + " entries");
                }
            }
            assertArrayEquals(key(7), t.get(key(7)));
        }
    }

    /**
     * A cursor left open past its store's or view's close throws IllegalStateException on next(), key() and value()
     * (its current entry is buffered, and was served after the close), and closes quietly.
     */
    @Test
    void aCursorOutlivingItsStoreOrViewSaysItIsClosed() {
        Varve store = Varve.open(config());
        Table t = store.table("t");
        for (int i = 0; i < 100; i++) t.put(key(i), new byte[i % 3 == 0 ? 3000 : 10]);
        long snap = store.snapshotNow();
        SnapshotView v = store.asOf(snap);
        Cursor ofView = v.table("t").scan(null, null);
        assertTrue(ofView.next());
        v.close();
        assertTrue(assertThrows(IllegalStateException.class, ofView::next).getMessage().contains("closed"));
        assertTrue(assertThrows(IllegalStateException.class, ofView::key).getMessage().contains("closed"));
        assertTrue(assertThrows(IllegalStateException.class, ofView::value).getMessage().contains("closed"));
        ofView.close();
        Cursor live = t.scan(null, null), part = t.partition(0).scan(key(0), null);
        assertTrue(live.next());
        assertTrue(part.next());
        store.close();
        assertTrue(assertThrows(IllegalStateException.class, live::next).getMessage().contains("closed"));
        assertTrue(assertThrows(IllegalStateException.class, part::next).getMessage().contains("closed"));
        for (Cursor c : new Cursor[]{live, part}) {
            assertTrue(assertThrows(IllegalStateException.class, c::key).getMessage().contains("the store is closed"));
            assertTrue(assertThrows(IllegalStateException.class, c::value).getMessage().contains("the store is closed"));
        }
        live.close();
        part.close();
        assertThrows(IllegalStateException.class, live::next);
    }

    /**
     * The same for a table's cursor not yet stepped when its store or view closes, and one over an empty table: a
     * table scan fetches each partition's first entries when it is opened, and the first next() after the close
     * served them (true, an entry read before the close) or said false, instead of saying the store was closed.
     */
    @Test
    void aTableCursorNotYetSteppedSaysItsStoreOrViewIsClosed() {
        Varve store = Varve.open(config());
        Table t = store.table("t");
        Table empty = store.table("empty");
        for (int i = 0; i < 100; i++) t.put(key(i), key(i));
        SnapshotView v = store.asOf(store.snapshotNow());
        Cursor ofView = v.table("t").scan(null, null), ofViewEmpty = v.table("empty").scan(null, null);
        v.close();
        assertTrue(assertThrows(IllegalStateException.class, ofView::next).getMessage().contains("closed"));
        assertTrue(assertThrows(IllegalStateException.class, ofViewEmpty::next).getMessage().contains("closed"));
        Cursor live = t.scan(null, null), liveEmpty = empty.scan(null, null);
        store.close();
        assertTrue(assertThrows(IllegalStateException.class, live::next).getMessage().contains("closed"));
        assertTrue(assertThrows(IllegalStateException.class, liveEmpty::next).getMessage().contains("closed"));
    }

    /**
     * A cursor open across a checkpoint, a destroy of its partition and an overwrite of every value: entries are in
     * order, each once, each a value stored under its key; the view's cursor reads the snapshot exactly.
     */
    @Test
    void aCursorOpenAcrossCheckpointDestroyAndOverwrites() {
        try (Varve store = Varve.open(config())) {
            Table t = store.table("t", TableOptions.callerPlaced(2));
            for (int i = 0; i < 600; i++) t.partition(i % 2).put(key(i), value(i, 0));
            long snap = store.snapshotNow();
            try (SnapshotView v = store.asOf(snap)) {
                Cursor live = t.partition(0).scan(null, null), past = v.table("t").partition(0).scan(null, null);
                int seen = 0, pastSeen = 0;
                byte[] last = null;
                for (int round = 0; round < 4; round++) {
                    for (int n = 0; n < 40 && live.next(); n++, seen++) {
                        if (last != null) assertTrue(Arrays.compareUnsigned(last, live.key()) < 0, "live keys out of order");
                        last = live.key();
                        int i = Integer.parseInt(new String(last, StandardCharsets.UTF_8).substring(1));
                        assertTrue(Arrays.equals(value(i, 0), live.value()) || Arrays.equals(value(i, 1), live.value()), "not a value of " + i);
                    }
                    for (int n = 0; n < 40 && past.next(); n++, pastSeen++) {
                        assertArrayEquals(key(2 * pastSeen), past.key());
                        assertArrayEquals(value(2 * pastSeen, 0), past.value());
                    }
                    if (round == 0) for (int i = 0; i < 600; i += 2) t.partition(0).put(key(i), value(i, 1));
                    if (round == 1) store.checkpoint().join();
                    if (round == 2) t.partition(0).destroy();
                }
                while (live.next()) seen++;
                while (past.next()) {
                    assertArrayEquals(key(2 * pastSeen), past.key());
                    assertArrayEquals(value(2 * pastSeen, 0), past.value());
                    pastSeen++;
                }
                live.close();
                past.close();
                assertEquals(300, pastSeen, "the view's cursor reads the whole snapshot");
                assertTrue(seen >= 120 && seen <= 300, seen + " entries");
            }
            try (Cursor c = t.partition(0).scan(null, null)) {
                assertFalse(c.next());
            }
        }
    }

    /** Values either side of an overflow page, so an overwrite moves values in and out of overflow chains. */
    static byte[] value(int i, int version) {
        byte[] v = new byte[(i + version) % 3 == 0 ? 2500 + i : 20];
        Arrays.fill(v, (byte) (i * 7 + version));
        return v;
    }
}
