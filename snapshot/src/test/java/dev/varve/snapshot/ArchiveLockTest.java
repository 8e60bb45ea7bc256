package dev.varve.snapshot;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicReference;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** The state lock spins before it parks; it must still exclude, wait as long as it is held, and re-enter. */
class ArchiveLockTest {
    @Test
    @Timeout(30)
    void aWaiterPastItsSpinParksAndEntersOnlyOnceTheHolderLetsGo() throws Exception {
        ArchiveLock lock = new ArchiveLock();
        AtomicBoolean holderInside = new AtomicBoolean();
        AtomicReference<Throwable> failure = new AtomicReference<>();
        CountDownLatch held = new CountDownLatch(1);
        CountDownLatch waiting = new CountDownLatch(1);
        Thread holder = new Thread(() -> {
            lock.lock();
            try {
                holderInside.set(true);
                held.countDown();
                waiting.await();
                Thread.sleep(50); // far past the waiter's spin: it parks, and must still wait
                holderInside.set(false);
            } catch (InterruptedException e) {
                failure.set(e);
            } finally {
                lock.unlock();
            }
        });
        holder.start();
        assertTrue(held.await(10, TimeUnit.SECONDS));
        Thread waiter = new Thread(() -> {
            waiting.countDown();
            try {
                lock.lock();
                try {
                    if (holderInside.get()) failure.set(new AssertionError("the waiter entered while the holder was inside"));
                } finally {
                    lock.unlock();
                }
            } catch (Throwable e) {
                failure.set(e);
            }
        });
        waiter.start();
        holder.join();
        waiter.join();
        assertNull(failure.get());
    }

    @Test
    @Timeout(30)
    void manyThreadsTakeItInTurn() throws Exception {
        ArchiveLock lock = new ArchiveLock();
        long[] counter = {0};
        AtomicBoolean inside = new AtomicBoolean();
        AtomicReference<Throwable> failure = new AtomicReference<>();
        Thread[] threads = new Thread[4];
        for (int t = 0; t < threads.length; t++) {
            threads[t] = new Thread(() -> {
                try {
                    for (int i = 0; i < 20_000; i++) {
                        lock.lock();
                        try {
                            if (!inside.compareAndSet(false, true)) failure.set(new AssertionError("two threads inside the state lock"));
                            counter[0]++;
                            inside.set(false);
                        } finally {
                            lock.unlock();
                        }
                    }
                } catch (Throwable e) {
                    failure.set(e);
                }
            });
            threads[t].start();
        }
        for (Thread t : threads) t.join();
        assertNull(failure.get());
        assertEquals(80_000, counter[0]);
    }

    @Test
    @Timeout(30)
    void itsHolderTakesItAgainAndOthersWaitUntilBothAreLetGo() throws Exception {
        ArchiveLock lock = new ArchiveLock();
        lock.lock();
        lock.lock(); // re-entered at once, not after a spin that could never end
        lock.unlock();
        AtomicBoolean taken = new AtomicBoolean();
        Thread other = new Thread(() -> {
            lock.lock();
            taken.set(true);
            lock.unlock();
        });
        other.start();
        other.join(200); // it cannot get in while this thread still holds the lock once
        assertFalse(taken.get());
        lock.unlock();
        other.join();
        assertTrue(taken.get());
    }

    @Test
    void theGateIsRefusedUnderTheStateLockAndTakenBeforeIt() {
        ArchiveLock lock = new ArchiveLock();
        lock.lock();
        try {
            assertThrows(IllegalStateException.class, lock::lockAppends);
        } finally {
            lock.unlock();
        }
        lock.lockWithAppends();
        lock.unlockWithAppends();
    }
}
