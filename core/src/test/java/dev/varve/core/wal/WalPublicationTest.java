package dev.varve.core.wal;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicLong;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/** Appends publish in LSN order, and a writer parked for its turn is woken by the publish it waits for. */
@Timeout(60)
class WalPublicationTest {
    private static final long HOUR = TimeUnit.HOURS.toNanos(1);

    private static void awaitParked(Thread t) {
        while (t.getState() != Thread.State.TIMED_WAITING) {
            assertTrue(t.isAlive(), "the waiter returned before its turn");
            Thread.onSpinWait();
        }
    }

    /** With the safety-net timer at an hour, only the wake-up of the publish can end the wait (else the timeout fails). */
    @Test
    void aParkedWriterIsWokenByThePublishItWaitsFor() throws InterruptedException {
        WalPublication publication = new WalPublication(0, HOUR);
        AtomicBoolean result = new AtomicBoolean();
        Thread waiter = new Thread(() -> result.set(publication.await(200, () -> false)), "waiter");
        waiter.start();
        awaitParked(waiter);
        publication.advance(100); // not its turn: it parks again
        awaitParked(waiter);
        publication.advance(200);
        waiter.join();
        assertTrue(result.get());
        assertEquals(200, publication.position());
    }

    @Test
    void aParkedWriterGivesUpWhenTheWalFails() throws InterruptedException {
        WalPublication publication = new WalPublication(0, TimeUnit.MILLISECONDS.toNanos(1));
        AtomicBoolean failed = new AtomicBoolean();
        AtomicBoolean result = new AtomicBoolean(true);
        Thread waiter = new Thread(() -> result.set(publication.await(100, failed::get)), "waiter");
        waiter.start();
        awaitParked(waiter);
        failed.set(true); // the writer before it will never publish
        waiter.join();
        assertFalse(result.get());
    }

    /** Eight writers on however many cores: each publishes only after every earlier record, none is lost. */
    @Test
    void writersPublishInTheOrderTheyReserved() throws InterruptedException {
        WalPublication publication = new WalPublication(0, HOUR);
        AtomicLong reserved = new AtomicLong();
        int records = 20_000;
        List<Long> order = new ArrayList<>();
        Thread[] writers = new Thread[8];
        for (int w = 0; w < writers.length; w++) {
            writers[w] = new Thread(() -> {
                for (long lsn; (lsn = reserved.getAndIncrement()) < records; ) {
                    assertTrue(publication.await(lsn, () -> false));
                    order.add(lsn); // safe: only the writer whose turn it is gets here
                    publication.advance(lsn + 1);
                }
            }, "writer-" + w);
            writers[w].start();
        }
        for (Thread t : writers) t.join();
        assertEquals(records, publication.position());
        assertEquals(records, order.size());
        for (int i = 0; i < records; i++) assertEquals(i, order.get(i));
    }
}
