"""The seed's build_job in Python: a Job whose reader node reads val = 0..9 three records an epoch into total
(starting at 100), stopping when the data is finished, run by a JobRunner that checkpoints every epoch into a
temporary directory; then every epoch's checkpoint is loaded back and its total printed. Also prints what a job
resumed from epoch 2 ends with (the same as a run that never stopped)."""
import shutil
import tempfile

import numpy as np

from moka import core
from moka.checkpoint import Job, JobRunner, MultiNodeCheckpointManager
from moka.dataio import ReaderWithLimit
from moka.dataset import Dataset
from moka.pipeline import pipe
from moka.schema import ConstRecord, Struct
from moka.session import LocalSession
from moka.task import Node, Task


def build_job():
    with Node("reader"):
        with Job() as job:
            with job.init_group:
                init_net = core.Net("init_net")
                data_arr = Struct(("val", np.array(range(10))))
                data = ConstRecord(init_net, data_arr)
                ds = Dataset(data)
                full_reader = ds.reader(init_net)
                total = init_net.Const([100])
                Task(step=init_net)

            def inc_total(rec):
                net = core.Net("inc_total")
                net.Add([total, rec.val()], [total])
                return [net]

            epoch_reader = ReaderWithLimit(full_reader, num_iter=3)
            pipe(epoch_reader, processor=inc_total)
            job.add_stop_signal(epoch_reader.data_finished())
        total_fetcher = Task(step=core.Net("empty"), outputs=[total])
    return job, total_fetcher


def total_of(session, fetcher):
    session.run(fetcher)
    return int(fetcher.outputs()[0].fetch()[0])


directory = tempfile.mkdtemp(prefix="moka_build_job_")
try:
    job, total_fetcher = build_job()
    session = LocalSession()
    epochs = JobRunner(job, MultiNodeCheckpointManager(directory, "minidb")).train(session)
    print(f"epochs={epochs}")
    print(f"total={total_of(session, total_fetcher)}")
    checkpoint = MultiNodeCheckpointManager(directory, "minidb")
    resumed = LocalSession()
    JobRunner(job, checkpoint, resume_from_epoch=2).train(resumed)
    print(f"total_resumed_from_epoch_2={total_of(resumed, total_fetcher)}")
    for epoch in range(1, epochs + 1):
        resumed.run(checkpoint.load(epoch))
        print(f"checkpoint.{epoch}.total={total_of(resumed, total_fetcher)}")
finally:
    shutil.rmtree(directory)
