package dev.varve.snapshot;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

import java.nio.ByteBuffer;
import java.util.HashMap;
import java.util.Map;
import java.util.Random;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** The archived-page cache returns exactly what was put, under replacement, and forgets evicted pages and, when cleared, all. */
@Timeout(180)
class ArchivedPageCacheTest {
    @Test
    void servesWhatWasPutAndEvictsUnderPressure() {
        int pageSize = 1024;
        ArchivedPageCache cache = new ArchivedPageCache(16, pageSize);
        Random rnd = new Random(3);
        Map<Long, Byte> fill = new HashMap<>();
        ByteBuffer src = ByteBuffer.allocateDirect(pageSize);
        ByteBuffer dst = ByteBuffer.allocateDirect(pageSize);
        int hits = 0;
        for (int i = 0; i < 5000; i++) {
            long page = rnd.nextInt(40);
            if (cache.copyOut(page, dst, 0)) {
                hits++;
                for (int b = 0; b < pageSize; b += 97) assertEquals(fill.get(page).byteValue(), dst.get(b), "page " + page);
            } else {
                byte v = (byte) rnd.nextInt();
                for (int b = 0; b < pageSize; b++) src.put(b, v);
                fill.put(page, v);
                cache.put(page, src, 0);
                assertTrue(cache.copyOut(page, dst, 0), "just put");
            }
        }
        assertTrue(hits > 1000, "the cache serves repeats: " + hits);
        ArchivedPageCache tiny = new ArchivedPageCache(1, pageSize);
        tiny.put(1, src, 0);
        tiny.put(2, src, 0);
        assertFalse(tiny.copyOut(1, dst, 0), "replaced");
        assertTrue(tiny.copyOut(2, dst, 0));
        tiny.clear();
        assertFalse(tiny.copyOut(2, dst, 0), "forgotten");
        tiny.put(3, src, 0);
        assertTrue(tiny.copyOut(3, dst, 0), "usable again after clear");
    }
}
