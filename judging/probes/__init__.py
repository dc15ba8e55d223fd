"""Judge probes (issue #32 item 5; the paper's §D.1: "rewriting a procedure to be more verbose (while
attempting not to introduce new information) can increase scores").

A probe samples a generator's L2, perturbs each, and has the judge judge the original and the perturbed one:
- verbose: an LLM rewrites each L2 more verbosely with the same content (prompts/judge_probe_verbose.txt); a
  judge that is not swayed by length gives the same verdicts, so the paired change in How2Score should be 0;
- delete_step / swap_steps: one step removed, or two steps exchanged: a known right answer, the judge should
  find more critical failures on the perturbed L2 (its detection rate).

models.py (the probe and its items), perturb.py (the seeded sample and perturbations), jobs.py (the service
that makes a probe and the job that runs it), stats.py (the figures), results.py (the figures of a probe
read from its items), views.py and forms.py (the staff pages).
"""
