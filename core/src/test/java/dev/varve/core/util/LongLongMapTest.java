package dev.varve.core.util;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

import java.util.HashMap;
import java.util.Map;
import java.util.Random;

import static org.junit.jupiter.api.Assertions.assertEquals;

/** LongLongMap against HashMap under random puts, replaces, removes (removal shifts probe chains back) and clears. */
@Timeout(180)
class LongLongMapTest {
    @Test
    void behavesLikeAHashMap() {
        for (long seed = 0; seed < 20; seed++) {
            Random r = new Random(seed);
            LongLongMap map = new LongLongMap(4);
            Map<Long, Long> model = new HashMap<>();
            int range = 1 + r.nextInt(2000);
            for (int i = 0; i < 20_000; i++) {
                if (i == 10_000 && seed % 2 == 1) { // refilled after a clear, as a Skippy promotion reuses its map
                    map.clear();
                    model.clear();
                }
                long k = r.nextInt(range);
                switch (r.nextInt(4)) {
                    case 0 -> assertEquals(model.remove(k) != null, map.remove(k), "seed " + seed + " remove " + k);
                    case 1 -> assertEquals(model.computeIfPresent(k, (x, v) -> v + 1) != null, model.containsKey(k) && map.replace(k, model.get(k)));
                    default -> assertEquals(model.putIfAbsent(k, (long) i) == null, map.putIfAbsent(k, i), "seed " + seed + " put " + k);
                }
                assertEquals(model.size(), map.size());
            }
            for (long k = 0; k < range; k++) assertEquals(model.getOrDefault(k, -7L), map.get(k, -7), "seed " + seed + " key " + k);
            Map<Long, Long> seen = new HashMap<>();
            map.forEach(seen::put);
            assertEquals(model, seen);
        }
    }
}
