package dev.varve.core.agent;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

import java.time.Duration;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** The agent lifecycle on a runner's thread and stepped by hand, including failures and close. */
@Timeout(30)
class AgentsTest {
    /** Does one unit of work per queued item; records its lifecycle and the threads it ran on. */
    private static final class Counting implements Agent {
        final AtomicInteger queued = new AtomicInteger();
        final AtomicInteger done = new AtomicInteger();
        final List<String> events = new CopyOnWriteArrayList<>();
        final List<Thread> threads = new CopyOnWriteArrayList<>();
        final CountDownLatch closed = new CountDownLatch(1);
        RuntimeException failAt3;

        @Override
        public String roleName() {
            return "counting";
        }

        @Override
        public void onStart() {
            events.add("start");
        }

        @Override
        public int doWork() {
            threads.add(Thread.currentThread());
            if (queued.get() == 0) return 0;
            queued.decrementAndGet();
            if (done.incrementAndGet() == 3 && failAt3 != null) throw failAt3;
            return 1;
        }

        @Override
        public void onError(Throwable failure) {
            events.add("error " + failure.getMessage());
        }

        @Override
        public void onClose() {
            events.add("close");
            closed.countDown();
        }
    }

    @Test
    void invokerStepsOnTheCallersThreadOnlyWhenAsked() {
        Agents agents = Agents.invoked();
        Counting a = new Counting();
        AgentHandle h = agents.start(a, Duration.ofMillis(1));
        a.queued.set(2);
        h.wake(); // does not step
        assertEquals(0, a.done.get());
        assertEquals(1, agents.invoker("counting").invoke());
        assertEquals(1, agents.invokeAll());
        assertEquals(0, agents.invokeAll(), "nothing left");
        assertEquals(2, a.done.get());
        assertTrue(a.threads.stream().allMatch(t -> t == Thread.currentThread()));
        assertFalse(agents.parallel());
        h.close();
        h.close();
        assertEquals(List.of("start", "close"), a.events, "onClose once");
        assertEquals(0, agents.invoker("counting").invoke(), "a closed agent does nothing");
    }

    @Test
    void invokerAwaitProgressStepsTheWaitingCaller() {
        Agents agents = Agents.invoked();
        Counting a = new Counting();
        AgentHandle h = agents.start(a, Duration.ofMillis(1));
        a.queued.set(1);
        h.awaitProgress();
        assertEquals(1, a.done.get());
    }

    @Test
    void aFailedStepClosesTheInvokedAgentAndReachesTheStepper() {
        Agents agents = Agents.invoked();
        Counting a = new Counting();
        a.failAt3 = new IllegalStateException("disk gone");
        agents.start(a, Duration.ofMillis(1));
        a.queued.set(5);
        AgentInvoker i = agents.invoker("counting");
        i.invoke();
        i.invoke();
        IllegalStateException e = assertThrows(IllegalStateException.class, i::invoke);
        assertSame(a.failAt3, e);
        assertTrue(i.isClosed());
        assertEquals(List.of("start", "error disk gone", "close"), a.events);
        assertEquals(0, i.invoke());
        assertEquals(3, a.done.get(), "no step after the failure");
    }

    @Test
    void invokerNamesWhatIsMissing() {
        Agents agents = Agents.invoked();
        agents.start(new Counting(), Duration.ofMillis(1));
        IllegalStateException e = assertThrows(IllegalStateException.class, () -> agents.invoker("archiver"));
        assertTrue(e.getMessage().contains("archiver") && e.getMessage().contains("counting"), e.getMessage());
        assertThrows(IllegalStateException.class, () -> Agents.dedicated().invokeAll());
        assertThrows(IllegalArgumentException.class, () -> agents.start(new Counting(), Duration.ZERO));
        assertThrows(IllegalArgumentException.class, () -> new AgentInvoker(null));
    }

    @Test
    void runnerWorksOnItsOwnNamedThreadAndClosesCleanly() throws Exception {
        Counting a = new Counting();
        AgentHandle h = Agents.dedicated().start(a, Duration.ofSeconds(10)); // only a wake ends an idle park
        a.queued.set(3);
        h.wake();
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(20);
        while (a.done.get() < 3) {
            assertTrue(System.nanoTime() < deadline, "the runner did the queued work after a wake");
            Thread.onSpinWait();
        }
        h.close();
        assertEquals(List.of("start", "close"), a.events, "onClose ran before close returned");
        Thread t = a.threads.get(0);
        assertEquals("varve-counting", t.getName());
        assertTrue(t.isDaemon());
        assertFalse(t.isAlive());
    }

    @Test
    void aFailedStepEndsTheRunner() throws Exception {
        Counting a = new Counting();
        a.failAt3 = new IllegalStateException("disk gone");
        AgentRunner r = new AgentRunner(a, IdleStrategy.parking(Duration.ofMillis(1)));
        a.queued.set(5);
        r.start();
        assertTrue(a.closed.await(20, TimeUnit.SECONDS));
        assertEquals(List.of("start", "error disk gone", "close"), a.events);
        assertEquals(3, a.done.get());
        r.close();
        assertFalse(r.isRunning());
        assertThrows(IllegalStateException.class, r::start);
    }

    @Test
    void aRunnerClosedBeforeItStartedStillCloses() {
        Counting a = new Counting();
        AgentRunner r = new AgentRunner(a, IdleStrategy.parking(Duration.ofMillis(1)));
        r.close();
        assertEquals(List.of("close"), a.events);
        assertThrows(IllegalStateException.class, r::start);
    }
    /**
     * An agent that asks to rest (an idle period of an hour) is parked that long after a step with no work, and a
     * wake steps it again: the test would time out if the runner ignored the wake, and would count dozens of
     * steps nobody woke it for if it ignored the ask.
     */
    @Test
    void aRestingAgentStepsAgainWhenWokenNotBefore() throws InterruptedException {
        java.util.concurrent.Semaphore steps = new java.util.concurrent.Semaphore(0);
        Agent resting = new Agent() {
            @Override
            public String roleName() {
                return "resting";
            }

            @Override
            public int doWork() {
                steps.release();
                return 0;
            }

            @Override
            public long idleNanos(long periodNanos) {
                return TimeUnit.HOURS.toNanos(1);
            }
        };
        AgentHandle h = Agents.dedicated().start(resting, Duration.ofMillis(1));
        try {
            steps.acquire(); // the first step, then it rests
            for (int i = 0; i < 3; i++) {
                h.wake();
                steps.acquire();
            }
            Thread.sleep(50); // a runner ignoring the ask would step ~50 times here on its 1 ms idle period
            assertTrue(steps.availablePermits() < 3, steps.availablePermits() + " steps nobody woke it for");
        } finally {
            h.close();
        }
    }
}
