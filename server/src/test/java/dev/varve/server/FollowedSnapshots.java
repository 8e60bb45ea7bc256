package dev.varve.server;

import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;

/** Progress of a follow, as tests watch it: the sender snapshots the standby received, and the latest of them. */
final class FollowedSnapshots implements ShipProgress {
    private final Set<Long> held = ConcurrentHashMap.newKeySet();
    private volatile long latest;

    @Override
    public void received(long pages, long imagePages, long bytes) {
    }

    @Override
    public void followed(long writesApplied, long latestSenderSnapshot) {
        held.add(latestSenderSnapshot);
        latest = latestSenderSnapshot;
    }

    /** How many sender snapshots the standby received. */
    int count() {
        return held.size();
    }

    /** The latest sender snapshot the standby received (0 before any). */
    long latest() {
        return latest;
    }
}
