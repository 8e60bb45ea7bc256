/**
 * Background work as agents: an {@link dev.varve.core.agent.Agent} has a role name and a bounded duty-cycle step;
 * an {@link dev.varve.core.agent.AgentRunner} steps it on its own thread with an
 * {@link dev.varve.core.agent.IdleStrategy}, an {@link dev.varve.core.agent.AgentInvoker} lets a test step it by hand,
 * and {@link dev.varve.core.agent.Agents} picks one of the two for all of a store's agents (the archiver, the
 * checkpoint trigger, the WAL flusher). Agents take no lock of this package while stepping; the locks their steps
 * take are those of the work they do (see the global lock order in {@code dev.varve.engine}).
 */
package dev.varve.core.agent;
