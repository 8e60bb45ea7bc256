package dev.varve.snapshot;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

import java.util.SplittableRandom;
import java.util.TreeSet;
import java.util.concurrent.TimeUnit;

import static org.junit.jupiter.api.Assertions.assertEquals;

/** The declarations a level counts answer floors, lasts, sizes and positions exactly as a sorted set would, through growth, raises, removals and forgetting. */
@Timeout(value = 2, unit = TimeUnit.MINUTES)
class SortedIdsTest {
    @Test
    void answersLikeASortedSet() {
        SplittableRandom random = new SplittableRandom(11);
        SortedIds ids = new SortedIds();
        TreeSet<Long> model = new TreeSet<>();
        long next = 1;
        for (int step = 0; step < 50_000; step++) {
            int op = random.nextInt(100);
            if (op < 70) {
                long id = next++;
                ids.add(id);
                model.add(id);
            } else if (op < 80 && next > 1) {
                long id = 1 + random.nextLong(next - 1); // a rank raise: an older id, maybe already counted or forgotten
                if (model.isEmpty() || id >= model.first()) {
                    ids.add(id);
                    model.add(id);
                }
            } else if (op < 83 && !model.isEmpty()) {
                long oldest = model.first() + random.nextInt(20);
                ids.forgetBelow(oldest);
                model.headSet(oldest).clear();
            } else if (op < 90 && !model.isEmpty()) {
                long id = random.nextBoolean() ? (random.nextBoolean() ? model.first() : model.last()) : model.first() + random.nextLong(next - model.first());
                ids.remove(id); // a drop: the oldest, the newest or any, present or not
                model.remove(id);
            } else if (op == 99 && random.nextInt(50) == 0) {
                ids.clear();
                model.clear();
            }
            long probe = random.nextLong(next + 5);
            Long floor = model.floor(probe);
            assertEquals(floor == null ? 0 : floor, ids.floor(probe), "floor of " + probe + " at step " + step);
            assertEquals(model.isEmpty() ? 0 : model.last(), ids.last());
            assertEquals(model.size(), ids.size());
            assertEquals(model.headSet(probe).size(), ids.firstAtLeast(probe), "position of " + probe);
            assertEquals(model.contains(probe) ? model.headSet(probe).size() : -1, ids.indexOf(probe));
            int at = ids.firstAtLeast(probe);
            if (at < ids.size()) assertEquals(model.ceiling(probe), ids.at(at), "the id at the position of " + probe);
        }
    }
}
