package dev.varve.snapshot;

import dev.varve.core.agent.Agent;
import dev.varve.core.agent.AgentHandle;
import dev.varve.core.agent.Agents;

import java.time.Duration;
import java.util.concurrent.TimeUnit;

/**
 * The background agent that trickles captured pre-states from the capture buffer into the Pagelog and their
 * mappings into the Maplog, in capture order, between checkpoints, and applies the keepFor rules as snapshots age.
 * A checkpoint waits for it to catch up with the mark ({@link CheckpointFlush#flush}). A failure stops it and is
 * reported to every later capture and checkpoint.
 */
final class Archiver implements Agent {
    /**
     * Idle between steps that found nothing to do while captures are pending (captures do not wake it: a wait for it
     * does). With none pending it rests until the next keepFor check instead, and the capture that finds the queue
     * empty wakes it ({@link PendingCaptures#add}): a store without snapshots spent 7% of a core stepping this agent
     * a thousand times a second for nothing.
     */
    private static final Duration IDLE = Duration.ofMillis(1);
    private static final long ENFORCE_NANOS = TimeUnit.SECONDS.toNanos(1);
    private final SnapshotArchive archive;
    private Agents agents = Agents.dedicated();
    private volatile AgentHandle handle;
    private long nextEnforceNanos; // stepping thread only
    /** When the archiver first let a few pending captures gather; 0 when it is not holding any. Stepping thread only. */
    private long holdingSince;
    /** The longest captures gather before they are archived anyway. */
    static final Duration HOLD = Duration.ofMillis(2);

    Archiver(SnapshotArchive archive) {
        this.archive = archive;
    }

    /** How to run: set before {@link #start}. */
    synchronized void agents(Agents agents) {
        if (agents == null) throw new IllegalArgumentException("agents must not be null");
        if (handle != null) throw new IllegalStateException("the archiver has started already");
        this.agents = agents;
    }

    synchronized void start() {
        if (handle != null) return;
        nextEnforceNanos = System.nanoTime();
        handle = agents.start(this, IDLE);
    }

    @Override
    public String roleName() {
        return "archiver";
    }

    /** A capture was queued behind none while the archiver rests: wakes it. */
    void wake() {
        AgentHandle h = handle;
        if (h != null) h.wake();
    }

    /** Parks until the next keepFor check when no capture is pending, else for the idle period. */
    @Override
    public long idleNanos(long periodNanos) {
        if (!archive.archiverMayRest()) return periodNanos;
        return Math.max(periodNanos, nextEnforceNanos - System.nanoTime());
    }

    /** The caller waits for archiving to progress: wakes the agent, or steps it when stepped by hand. */
    void awaitProgress() {
        AgentHandle h = handle;
        if (h != null) h.awaitProgress();
    }

    /**
     * Applies the keepFor rules once a second, then archives the next batch — once enough captures gathered to fill
     * diff packs, someone waits, or the oldest has waited {@link #HOLD}; the work count is the batch's.
     */
    @Override
    public int doWork() {
        long now = System.nanoTime();
        if (now - nextEnforceNanos >= 0) {
            // keepFor rules drop snapshots as they age; replay applies the policy from its records alone, and the check
            // still waits a period, so that the archiver rests as long meanwhile
            if (!archive.isReplaying()) archive.enforce();
            nextEnforceNanos = now + ENFORCE_NANOS;
        }
        if (agents.parallel() && !archive.archiveDue()) { // stepped by hand, a step archives what is pending
            if (holdingSince == 0) holdingSince = now;
            if (now - holdingSince < HOLD.toNanos()) return 0;
        }
        holdingSince = 0;
        return archive.archiveNext() ? 1 : 0;
    }

    @Override
    public void onError(Throwable failure) {
        archive.failed(failure);
    }

    void stop() {
        AgentHandle h = handle;
        if (h != null) h.close();
    }
}
