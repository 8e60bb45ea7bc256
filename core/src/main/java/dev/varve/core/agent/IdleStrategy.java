package dev.varve.core.agent;

import java.time.Duration;
import java.util.concurrent.locks.LockSupport;

/**
 * What an {@link AgentRunner}'s thread does between steps that found no work: it parks for at most the agent's idle
 * period, and {@link AgentRunner#wake} unparks it early. Parking rather than spinning: the store's agents react to
 * checkpoints, captures and timers measured in microseconds to seconds, and the machine's cores belong to the writers.
 */
public final class IdleStrategy {
    private final long maxParkNanos;

    private IdleStrategy(long maxParkNanos) {
        this.maxParkNanos = maxParkNanos;
    }

    /**
     * Parks up to {@code maxPark} after a step that did no work.
     *
     * @throws IllegalArgumentException unless {@code maxPark} is positive
     */
    public static IdleStrategy parking(Duration maxPark) {
        if (maxPark == null || maxPark.isNegative() || maxPark.isZero())
            throw new IllegalArgumentException("an idle period must be positive, was " + maxPark);
        return new IdleStrategy(maxPark.toNanos());
    }

    /**
     * Idles after a step of {@code agent} that did {@code workCount} units of work: none is idle (as long as the agent
     * asks, {@link Agent#idleNanos}), some means step again at once.
     */
    void idle(int workCount, Agent agent, Object blocker) {
        if (workCount <= 0) LockSupport.parkNanos(blocker, agent.idleNanos(maxParkNanos));
    }
}
