#!/usr/bin/env python3
# Startup time (process start to the first 200 from /global/health) and idle RSS of a tandem binary.
# Usage: python3 scripts/startup.py bin/tandem   (uses port 4666 and a scratch dir in /tmp/st)
import subprocess, time, urllib.request, os, statistics, sys
times=[]; rss=[]; anon=[]; pss=[]
os.makedirs('/tmp/st', exist_ok=True)
env=dict(os.environ, XDG_DATA_HOME='/tmp/st/d', XDG_STATE_HOME='/tmp/st/s', XDG_CONFIG_HOME='/tmp/st/c', HOME='/tmp/st', TANDEM_SERVER_PASSWORD='pw')
for i in range(7):
    t0=time.perf_counter()
    p=subprocess.Popen([sys.argv[1],'serve','--port','4666','--dir','/tmp/st'],stdout=subprocess.DEVNULL,stderr=subprocess.DEVNULL,env=env)
    while True:
        try:
            urllib.request.urlopen('http://127.0.0.1:4666/global/health',timeout=0.05).read(); break
        except Exception: time.sleep(0.002)
    times.append((time.perf_counter()-t0)*1000)
    time.sleep(3)
    for l in open(f'/proc/{p.pid}/status'):
        if l.startswith('VmRSS'): rss.append(int(l.split()[1])/1024)
        if l.startswith('RssAnon'): anon.append(int(l.split()[1])/1024)
    for l in open(f'/proc/{p.pid}/smaps_rollup'):
        if l.startswith('Pss:'): pss.append(int(l.split()[1])/1024)
    p.terminate(); p.wait()
print('ready ms: median %.1f min %.1f max %.1f'%(statistics.median(times),min(times),max(times)))
# RSS counts the binary's file pages the process touched, which some kernels map in 2 MB folios;
# the anonymous part and PSS say what the process itself holds.
print('idle RSS MB: median %.1f (anonymous %.1f, PSS %.1f)'%(statistics.median(rss),statistics.median(anon),statistics.median(pss)))
