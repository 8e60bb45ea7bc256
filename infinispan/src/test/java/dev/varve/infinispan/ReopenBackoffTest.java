package dev.varve.infinispan;

import org.junit.jupiter.api.Test;

import static dev.varve.infinispan.ReopenBackoff.FIRST_WAIT_NANOS;
import static dev.varve.infinispan.ReopenBackoff.LONGEST_WAIT_NANOS;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** The waits between reopens of a failed store, on a clock the test moves. */
class ReopenBackoffTest {
    @Test
    void theFirstReopenRunsAtOnceAndEachNextWaitsTwiceAsLongUpToAMinute() {
        ReopenBackoff b = new ReopenBackoff();
        long now = 5_000;
        assertTrue(b.due(now));
        long wait = b.attempted(now);
        assertEquals(FIRST_WAIT_NANOS, wait);
        for (int i = 0; i < 10; i++) {
            assertFalse(b.due(now + wait - 1), "not before its wait, reopen " + i);
            now += wait;
            assertTrue(b.due(now));
            long next = b.attempted(now);
            assertEquals(Math.min(2 * wait, LONGEST_WAIT_NANOS), next);
            wait = next;
        }
        assertEquals(LONGEST_WAIT_NANOS, wait);
    }

    @Test
    void aStoreSoundForAMinuteAfterItsReopenStartsTheWaitsOver() {
        ReopenBackoff b = new ReopenBackoff();
        b.attempted(0);
        b.attempted(FIRST_WAIT_NANOS);
        b.sound(FIRST_WAIT_NANOS + LONGEST_WAIT_NANOS - 1);
        assertFalse(b.due(FIRST_WAIT_NANOS + 1), "sound for less than a minute: the wait earned stands");
        b.sound(FIRST_WAIT_NANOS + LONGEST_WAIT_NANOS);
        long later = FIRST_WAIT_NANOS + LONGEST_WAIT_NANOS + 1;
        assertTrue(b.due(later), "after a minute sound, the next failure is reopened at once");
        assertEquals(FIRST_WAIT_NANOS, b.attempted(later));
    }
}
