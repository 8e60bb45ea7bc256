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
        return VarveConfig.builder().path(dir).pageSize(1024).dataRegionSize(16L << 20).partitions(3).build();
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
}
